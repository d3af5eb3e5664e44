//! What to do about a failed TLS handshake: the usual causes of a client's
//! "invalid peer certificate" (a CA certificate served as the server's, a
//! name the certificate does not cover, an expired certificate, an issuer
//! the client does not trust), each with its fix.
//!
//! rustls reports these as text inside tonic's transport error (its types
//! are not part of tonic's API), so the causes are recognised by the names
//! rustls prints. An error that matches none gets no advice: a wrong hint
//! is worse than none.

/// The shortest working set-up: one self-signed *leaf* certificate, which
/// the server serves and the clients trust. `openssl req -x509` alone makes
/// a CA certificate (basicConstraints CA:TRUE), which rustls refuses as a
/// server's.
pub const LEAF_RECIPE: &str = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
-nodes -days 365 -subj /CN=localhost -addext basicConstraints=critical,CA:FALSE \
-addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout server.key -out server.pem";

/// The cause and the fix for a connection error's text (with its causes),
/// if it has a usual one.
pub fn advice(error: &str) -> Option<String> {
    let recipe = || {
        format!(
            "a leaf certificate is made by `{LEAF_RECIPE}`, served by `xccd serve --tls-cert \
             server.pem --tls-key server.key`, and trusted by clients with `--ca-cert server.pem`"
        )
    };
    if error.contains("CaUsedAsEndEntity") {
        return Some(format!(
            "the server presents a CA certificate (basicConstraints CA:TRUE, what `openssl req \
             -x509` makes by default) as its own; it needs a leaf certificate \
             (basicConstraints=CA:FALSE, with a subjectAltName for its host name or address): {}",
            recipe()
        ));
    }
    if error.contains("not valid for name") || error.contains("NotValidForName") {
        return Some(format!(
            "the server's certificate does not name the host in the URL; connect with a name \
             its certificate holds, or make one whose subjectAltName has this host (DNS:NAME \
             or IP:ADDRESS): {}",
            recipe()
        ));
    }
    if error.contains("certificate expired") || error.contains("Expired") {
        return Some(format!(
            "the server's certificate has expired (or this machine's clock is wrong); make a \
             new one: {}",
            recipe()
        ));
    }
    if error.contains("not valid yet") || error.contains("NotValidYet") {
        return Some(
            "the server's certificate is not valid yet: this machine's clock or the \
             certificate's start date is wrong"
                .to_string(),
        );
    }
    // A certificate signed by another key than the trusted one shows as an
    // unknown issuer, a bad signature, or (keys of different kinds) an
    // unsupported signature algorithm for the trusted key.
    if error.contains("UnknownIssuer")
        || error.contains("BadSignature")
        || error.contains("UnsupportedSignatureAlgorithmForPublicKey")
    {
        return Some(
            "the server's certificate is not signed by a CA this client trusts; pass the CA \
             that signed it (or, for a self-signed certificate, the certificate itself) with \
             --ca-cert FILE"
                .to_string(),
        );
    }
    None
}

/// `error`, followed by the advice when there is one.
pub fn with_advice(error: String) -> String {
    match advice(&error) {
        Some(advice) => format!("{error}\n  hint: {advice}"),
        None => error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_usual_cause_has_its_fix_and_others_none() {
        let ca = advice("invalid peer certificate: Other(OtherError(CaUsedAsEndEntity))").unwrap();
        assert!(ca.contains("basicConstraints=CA:FALSE") && ca.contains(LEAF_RECIPE));
        let name = advice(
            "invalid peer certificate: certificate not valid for name \"127.0.0.1\"; \
             certificate is only valid for DNS name \"other\"",
        )
        .unwrap();
        assert!(name.contains("subjectAltName"));
        let expired =
            advice("invalid peer certificate: certificate expired: verification time 2").unwrap();
        assert!(expired.contains("expired"));
        let issuer = advice("invalid peer certificate: UnknownIssuer").unwrap();
        assert!(issuer.contains("--ca-cert"));
        assert_eq!(
            advice("tcp connect error: Connection refused (os error 111)"),
            None
        );
        assert_eq!(with_advice("refused".into()), "refused");
    }
}
