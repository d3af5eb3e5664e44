//! Who is calling: optional API keys, and the caller each request carries.
//!
//! With keys configured (`serve --api-keys FILE`), every call to the public
//! services must carry `authorization: Bearer KEY`; the key's *name* then
//! names the caller. Jobs belong to the caller that made them: another
//! caller can neither see, watch nor cancel them, and each caller has its own
//! limit of jobs at once. Without keys every caller is the same anonymous
//! one, as before.
//!
//! Keys are kept only as SHA-256 digests and never logged: a request's key
//! is digested and looked up, so neither a timing nor a log line tells
//! anything about the keys.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use super::status;
use crate::service::metrics as metric;
use tonic::{Request, Status};

/// The caller of a request: the name of its API key, or anonymous when the
/// server has no keys.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Caller(pub Option<Arc<str>>);

impl Caller {
    /// The caller a request carries (set by [`ApiKeys::interceptor`]).
    pub fn of<T>(request: &Request<T>) -> Caller {
        request
            .extensions()
            .get::<Caller>()
            .cloned()
            .unwrap_or_default()
    }

    /// Whether this caller may see a job that `owner` made.
    pub fn owns(&self, owner: &Caller) -> bool {
        self.0.is_none() || self == owner
    }

    /// The caller's name, for logs ("-" when anonymous).
    pub fn name(&self) -> &str {
        self.0.as_deref().unwrap_or("-")
    }
}

/// The server's API keys, by digest.
pub struct ApiKeys {
    names: HashMap<[u8; 32], Arc<str>>,
}

impl fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&str> = self.names.values().map(|n| &**n).collect();
        names.sort_unstable();
        f.debug_struct("ApiKeys").field("names", &names).finish()
    }
}

/// The shortest key taken.
pub const MIN_KEY_LEN: usize = 16;

fn digest(key: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(key).into()
}

impl ApiKeys {
    /// Reads the keys file: one key per line as `NAME KEY` (blank lines and
    /// lines starting with `#` are skipped). Names and keys are unique; a
    /// key has at least 16 printable characters.
    pub fn parse(text: &str) -> Result<ApiKeys, String> {
        let mut names = HashMap::new();
        let mut seen = std::collections::HashSet::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = || format!("line {}", n + 1);
            let mut words = line.split_whitespace();
            let (Some(name), Some(key), None) = (words.next(), words.next(), words.next()) else {
                return Err(format!("{}: expected `NAME KEY`", at()));
            };
            if key.len() < MIN_KEY_LEN {
                return Err(format!(
                    "{}: the key of {name:?} is shorter than {MIN_KEY_LEN} characters",
                    at()
                ));
            }
            if !seen.insert(name.to_string()) {
                return Err(format!("{}: the name {name:?} is given twice", at()));
            }
            if names
                .insert(digest(key.as_bytes()), Arc::from(name))
                .is_some()
            {
                return Err(format!("{}: the key of {name:?} is given twice", at()));
            }
        }
        if names.is_empty() {
            return Err("no key in the file".into());
        }
        Ok(ApiKeys { names })
    }

    /// The caller an `authorization` header names, if it carries a key.
    pub fn caller(&self, header: Option<&[u8]>) -> Option<Caller> {
        let key = header?.strip_prefix(b"Bearer ")?;
        self.names
            .get(&digest(key))
            .map(|name| Caller(Some(name.clone())))
    }
}

/// What the public services run before each call: with keys, the caller's
/// key must be known (UNAUTHENTICATED otherwise); the caller is put in the
/// request for the handlers.
pub fn authenticate(
    keys: Option<Arc<ApiKeys>>,
) -> impl FnMut(Request<()>) -> Result<Request<()>, Status> + Clone {
    move |mut request: Request<()>| {
        let caller = match &keys {
            None => Caller::default(),
            Some(keys) => {
                let header = request
                    .metadata()
                    .get("authorization")
                    .map(|v| v.as_bytes());
                match keys.caller(header) {
                    Some(caller) => caller,
                    None => {
                        metrics::counter!(metric::API_AUTH_FAILURES).increment(1);
                        return Err(status::error(
                            status::Reason::ApiKeyInvalid,
                            "this server takes calls with an API key: send the metadata \
                             `authorization: Bearer KEY`",
                        ));
                    }
                }
            }
        };
        request.extensions_mut().insert(caller);
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_their_callers() {
        let keys =
            ApiKeys::parse("# who may call\nalice  0123456789abcdef0\n\nbob 0123456789abcdef1\n")
                .unwrap();
        assert_eq!(
            keys.caller(Some(b"Bearer 0123456789abcdef1")),
            Some(Caller(Some("bob".into())))
        );
        for wrong in [
            &b"Bearer 0123456789abcdef2"[..],
            b"0123456789abcdef1",
            b"Bearer alice",
        ] {
            assert_eq!(keys.caller(Some(wrong)), None, "{wrong:?}");
        }
        assert_eq!(keys.caller(None), None);
        assert!(!format!("{keys:?}").contains("0123"), "keys never printed");
        for (bad, why) in [
            ("alice short", "shorter"),
            ("alice 0123456789abcdef0 extra", "NAME KEY"),
            ("a 0123456789abcdef0\na 0123456789abcdef1", "twice"),
            ("a 0123456789abcdef0\nb 0123456789abcdef0", "twice"),
            ("# none\n", "no key"),
        ] {
            let error = ApiKeys::parse(bad).unwrap_err();
            assert!(error.contains(why), "{bad:?}: {error}");
        }
        let anonymous = Caller::default();
        let alice = Caller(Some("alice".into()));
        assert!(anonymous.owns(&alice) && alice.owns(&alice));
        assert!(!alice.owns(&Caller(Some("bob".into()))));
    }
}
