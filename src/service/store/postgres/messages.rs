//! What the PostgreSQL store says about its server: a client error with its
//! causes, the same error as the store's (with the cause of a refused write
//! it degrades for), and a database URL without its password. It must not
//! talk to the server.

use postgres::error::SqlState;

use crate::service::store::{Cause, StoreError};

/// A client error with its causes: the client's own words are only its
/// kind ("db error"), the server's message is its source.
pub fn describe(error: &postgres::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string().replace('\n', " "));
        source = cause.source();
    }
    text
}

impl From<postgres::Error> for StoreError {
    fn from(error: postgres::Error) -> StoreError {
        let code = error.code();
        let cause = if code == Some(&SqlState::DISK_FULL) {
            Some(Cause::Full)
        } else if code == Some(&SqlState::READ_ONLY_SQL_TRANSACTION) {
            Some(Cause::ReadOnly)
        } else if code == Some(&SqlState::INSUFFICIENT_PRIVILEGE) {
            Some(Cause::PermissionDenied)
        } else if code == Some(&SqlState::DATA_CORRUPTED)
            || code == Some(&SqlState::INDEX_CORRUPTED)
        {
            return StoreError::Corrupt(describe(&error));
        } else {
            None
        };
        match cause {
            Some(cause) => StoreError::Unwritable {
                cause,
                detail: describe(&error),
            },
            None => StoreError::Io(describe(&error)),
        }
    }
}

/// `url` without its password, for messages and logs.
pub fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{scheme}://{name}:***@{host}{tail}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

/// Whether `url` names a PostgreSQL database (`postgres://` or
/// `postgresql://`).
pub fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_password_in_messages() {
        assert_eq!(
            redacted("postgres://xccd:secret@db:5432/jobs"),
            "postgres://xccd:***@db:5432/jobs"
        );
        assert_eq!(
            redacted("postgres://xccd@db/jobs?sslmode=disable"),
            "postgres://xccd@db/jobs?sslmode=disable"
        );
        assert_eq!(
            redacted("postgresql://a:b@c@host/x"),
            "postgresql://a:***@host/x"
        );
        assert_eq!(redacted("host=db user=x"), "host=db user=x");
        assert!(is_postgres_url("postgresql://db/x"));
        assert!(!is_postgres_url("sqlite:jobs"));
    }
}
