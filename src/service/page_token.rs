//! The page tokens of ListJobs and ListJobSolutions (AIP-158): opaque to
//! clients, so that their form can change, and bound to the request they
//! continue, so that a token passed to another list, another job or with
//! another filter is refused rather than read as a position it is not.
//!
//! A token is a small protobuf message (below, not in the public protos:
//! it is no part of the API) in base64url without padding. It says which
//! list it continues, the position there, and the first 8 bytes of the
//! SHA-256 of the request's parameters that must not change between pages
//! (ListJobs: its filter). It is neither signed nor secret: a crafted
//! token can only name a position the caller could page to anyway (the
//! lists are filtered by owner after decoding); the digest is there to
//! catch mistakes, not forgeries.
//!
//! Tokens are untrusted input: any string decodes to a position or to a
//! [`TokenError`], and tokens beyond [`MAX_LEN`] bytes are refused before
//! decoding.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use prost::Message as _;
use sha2::{Digest as _, Sha256};

use crate::service::job::JobId;

/// The longest token accepted, in bytes (the tokens made here have under
/// 50).
pub const MAX_LEN: usize = 256;

/// The list a token continues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum List {
    /// ListJobs; the position is the id of the last job of the previous
    /// page (jobs that end or are deleted then do not shift the pages).
    Jobs,
    /// ListJobSolutions of one job; the position is the index of the next
    /// solution.
    Solutions { job: JobId },
}

/// Why a token was refused. Every message starts with the field's name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error(
        "page_token: is {len} bytes long, longer than any page token (at most {MAX_LEN}); \
         pass the previous page's next_page_token unchanged"
    )]
    TooLong { len: usize },
    #[error(
        "page_token: {} is not a page token; pass the previous page's next_page_token unchanged",
        crate::xcc::problem::quote(.0)
    )]
    NotAToken(String),
    #[error("page_token: this token is of ListJobSolutions, not of ListJobs")]
    OfSolutions,
    #[error("page_token: this token is of ListJobs, not of ListJobSolutions")]
    OfJobs,
    #[error("page_token: this token is of another job's solutions")]
    OtherJob,
    #[error("page_token: this token was made with another filter; start again without a token")]
    OtherFilter,
    #[error(
        "page_token: this token was made with other request parameters; start again without a token"
    )]
    OtherParams,
}

/// The message inside a token. Tag numbers are its format: never reuse one.
#[derive(Clone, PartialEq, prost::Message)]
struct Token {
    /// [`KIND_JOBS`] or [`KIND_SOLUTIONS`]; 0 (unset) is no token.
    #[prost(uint32, tag = "1")]
    kind: u32,
    /// The job, for [`KIND_SOLUTIONS`].
    #[prost(uint64, tag = "2")]
    job: u64,
    #[prost(uint64, tag = "3")]
    position: u64,
    /// [`digest`] of the parameters.
    #[prost(fixed64, tag = "4")]
    params: u64,
}

const KIND_JOBS: u32 = 1;
const KIND_SOLUTIONS: u32 = 2;

/// The first 8 bytes of the parameters' SHA-256.
fn digest(params: &str) -> u64 {
    let hash = Sha256::digest(params.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash[..8]);
    u64::from_be_bytes(first)
}

/// The token of the page that starts after `position` of `list`, for
/// requests whose unchanging parameters are `params` (ListJobs: its
/// filter's text; ListJobSolutions: whatever the caller binds, "" for
/// none).
pub fn encode(list: List, position: u64, params: &str) -> String {
    let (kind, job) = match list {
        List::Jobs => (KIND_JOBS, 0),
        List::Solutions { job } => (KIND_SOLUTIONS, job),
    };
    let token = Token {
        kind,
        job,
        position,
        params: digest(params),
    };
    URL_SAFE_NO_PAD.encode(token.encode_to_vec())
}

/// The position a request's `page_token` names in `list`, `None` for the
/// empty token (the first page), or why it is no token of this request.
pub fn decode(token: &str, list: List, params: &str) -> Result<Option<u64>, TokenError> {
    if token.is_empty() {
        return Ok(None);
    }
    if token.len() > MAX_LEN {
        return Err(TokenError::TooLong { len: token.len() });
    }
    let not_a_token = || TokenError::NotAToken(token.to_string());
    let bytes = URL_SAFE_NO_PAD.decode(token).map_err(|_| not_a_token())?;
    let decoded = Token::decode(bytes.as_slice()).map_err(|_| not_a_token())?;
    match (decoded.kind, list) {
        (KIND_JOBS, List::Jobs) => {}
        (KIND_SOLUTIONS, List::Solutions { job }) if decoded.job == job => {}
        (KIND_SOLUTIONS, List::Solutions { .. }) => return Err(TokenError::OtherJob),
        (KIND_SOLUTIONS, List::Jobs) => return Err(TokenError::OfSolutions),
        (KIND_JOBS, List::Solutions { .. }) => return Err(TokenError::OfJobs),
        _ => return Err(not_a_token()),
    }
    if decoded.params != digest(params) {
        return Err(match list {
            List::Jobs => TokenError::OtherFilter,
            List::Solutions { .. } => TokenError::OtherParams,
        });
    }
    Ok(Some(decoded.position))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_token_gives_back_its_position() {
        let jobs = encode(List::Jobs, 41, "state = RUNNING");
        assert_eq!(decode(&jobs, List::Jobs, "state = RUNNING"), Ok(Some(41)));
        let solutions = encode(List::Solutions { job: 7 }, 1_000_000, "");
        assert_eq!(
            decode(&solutions, List::Solutions { job: 7 }, ""),
            Ok(Some(1_000_000))
        );
        // Position 0 and the largest ones survive too (proto3 omits zeros).
        for position in [0, u64::MAX] {
            let token = encode(List::Solutions { job: u64::MAX }, position, "x");
            assert_eq!(
                decode(&token, List::Solutions { job: u64::MAX }, "x"),
                Ok(Some(position))
            );
        }
    }

    #[test]
    fn the_empty_token_is_the_first_page() {
        assert_eq!(decode("", List::Jobs, "any"), Ok(None));
        assert_eq!(decode("", List::Solutions { job: 3 }, ""), Ok(None));
    }

    #[test]
    fn tokens_are_opaque_url_safe_and_short() {
        let token = encode(List::Solutions { job: u64::MAX }, u64::MAX, "a filter");
        assert!(token.len() < 50, "{token}");
        assert!(
            token
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "{token}"
        );
        // The old readable forms are gone from it.
        assert!(!token.contains("after/") && !token.contains('.'));
    }

    #[test]
    fn a_token_of_another_list_is_refused() {
        let jobs = encode(List::Jobs, 5, "");
        let solutions = encode(List::Solutions { job: 5 }, 2, "");
        assert_eq!(
            decode(&solutions, List::Jobs, ""),
            Err(TokenError::OfSolutions)
        );
        assert_eq!(
            decode(&jobs, List::Solutions { job: 5 }, ""),
            Err(TokenError::OfJobs)
        );
        assert_eq!(
            TokenError::OfSolutions.to_string(),
            "page_token: this token is of ListJobSolutions, not of ListJobs"
        );
    }

    #[test]
    fn a_token_of_another_job_is_refused() {
        let token = encode(List::Solutions { job: 5 }, 2, "");
        let error = decode(&token, List::Solutions { job: 6 }, "").unwrap_err();
        assert_eq!(error, TokenError::OtherJob);
        assert_eq!(
            error.to_string(),
            "page_token: this token is of another job's solutions"
        );
    }

    #[test]
    fn a_token_made_with_another_filter_is_refused() {
        let token = encode(List::Jobs, 9, "state = RUNNING");
        let error = decode(&token, List::Jobs, "state = QUEUED").unwrap_err();
        assert_eq!(error, TokenError::OtherFilter);
        assert_eq!(
            error.to_string(),
            "page_token: this token was made with another filter; start again without a token"
        );
        // Even a filter that differs only in spacing: the text is bound.
        assert_eq!(
            decode(&token, List::Jobs, "state  = RUNNING"),
            Err(TokenError::OtherFilter)
        );
        let token = encode(List::Solutions { job: 1 }, 9, "packed");
        assert_eq!(
            decode(&token, List::Solutions { job: 1 }, ""),
            Err(TokenError::OtherParams)
        );
    }

    #[test]
    fn strings_that_are_no_token_are_refused_with_the_string() {
        for text in [
            "after/jobs/5", // the old forms
            "5.2",
            "!!!",
            "AAAA",                                     // base64 of zeros: kind unset
            &URL_SAFE_NO_PAD.encode([0x08, 0x09]),      // kind 9
            &URL_SAFE_NO_PAD.encode([0xff]),            // no protobuf
            &format!("{}=", encode(List::Jobs, 1, "")), // padding
        ] {
            let error = decode(text, List::Jobs, "").unwrap_err();
            assert_eq!(error, TokenError::NotAToken(text.to_string()), "{text}");
            assert!(
                error.to_string().starts_with("page_token: \"")
                    && error.to_string().contains("is not a page token"),
                "{error}"
            );
        }
    }

    #[test]
    fn over_long_tokens_are_refused_before_decoding() {
        let long = "A".repeat(MAX_LEN + 1);
        let error = decode(&long, List::Jobs, "").unwrap_err();
        assert_eq!(error, TokenError::TooLong { len: MAX_LEN + 1 });
        assert!(error.to_string().contains("at most 256"), "{error}");
        // A token of exactly the limit is decoded (and here is none).
        assert!(matches!(
            decode(&"A".repeat(MAX_LEN), List::Jobs, ""),
            Err(TokenError::NotAToken(_))
        ));
    }

    fn list() -> impl Strategy<Value = List> {
        prop_oneof![
            Just(List::Jobs),
            any::<u64>().prop_map(|job| List::Solutions { job }),
        ]
    }

    proptest! {
        #[test]
        fn every_token_round_trips(list in list(), position: u64, params in ".{0,64}") {
            let token = encode(list, position, &params);
            prop_assert!(token.len() <= MAX_LEN);
            prop_assert_eq!(decode(&token, list, &params), Ok(Some(position)));
        }

        #[test]
        fn any_string_decodes_or_is_refused(text in "\\PC{0,300}", list in list()) {
            // Never a panic; a refusal names the field.
            if let Err(error) = decode(&text, list, "") {
                prop_assert!(error.to_string().starts_with("page_token: "));
            }
        }

        #[test]
        fn any_bytes_in_base64_decode_or_are_refused(bytes in proptest::collection::vec(any::<u8>(), 0..200), list in list()) {
            let text = URL_SAFE_NO_PAD.encode(&bytes);
            if let Err(error) = decode(&text, list, "") {
                prop_assert!(error.to_string().starts_with("page_token: "));
            }
        }

        #[test]
        fn a_token_answers_only_its_own_request(
            made in list(), asked in list(), position: u64, a in "[a-z ]{0,8}", b in "[a-z ]{0,8}",
        ) {
            let result = decode(&encode(made, position, &a), asked, &b);
            prop_assert_eq!(result.is_ok(), made == asked && a == b);
        }
    }
}
