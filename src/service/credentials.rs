//! Who may talk to whom: TLS for the public API and the workers' listener,
//! client certificates, and the workers' shared token.
//!
//! Certificates and keys are PEM, read by the caller (the CLI reads files);
//! TLS is rustls through tonic, so no OpenSSL is needed anywhere. Secrets
//! (keys, the token) never appear in `Debug` output or logs.

use std::fmt;

use subtle::ConstantTimeEq;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity, ServerTlsConfig};

/// A server's TLS: its certificate chain and key, and the CAs whose client
/// certificates it requires (none: any client may connect).
#[derive(Clone)]
pub struct ServerTls {
    pub cert: Vec<u8>,
    pub key: Vec<u8>,
    /// Clients must present a certificate signed by this CA (mutual TLS).
    pub client_ca: Option<Vec<u8>>,
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTls")
            .field("client_ca", &self.client_ca.is_some())
            .finish_non_exhaustive()
    }
}

impl ServerTls {
    pub fn config(&self) -> ServerTlsConfig {
        let mut config = ServerTlsConfig::new().identity(Identity::from_pem(&self.cert, &self.key));
        if let Some(ca) = &self.client_ca {
            config = config.client_ca_root(Certificate::from_pem(ca));
        }
        config
    }

    /// The same certificate, key and client CAs as a rustls configuration
    /// for an HTTP/1.1 listener (the dashboard's), where [`config`](Self::config)
    /// is tonic's for the gRPC ports.
    pub fn http1_config(&self) -> Result<tokio_rustls::rustls::ServerConfig, String> {
        use tokio_rustls::rustls::pki_types::pem::PemObject;
        use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
        use tokio_rustls::rustls::{server::WebPkiClientVerifier, RootCertStore, ServerConfig};
        let certificates = |pem: &[u8], what: &str| {
            CertificateDer::pem_slice_iter(pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("{what}: {e}"))
        };
        let chain = certificates(&self.cert, "the certificate")?;
        let key = PrivateKeyDer::from_pem_slice(&self.key).map_err(|e| format!("the key: {e}"))?;
        let builder = ServerConfig::builder();
        let builder = match &self.client_ca {
            None => builder.with_no_client_auth(),
            Some(ca) => {
                let mut roots = RootCertStore::empty();
                roots.add_parsable_certificates(certificates(ca, "the client CA")?);
                let verifier = WebPkiClientVerifier::builder(roots.into())
                    .build()
                    .map_err(|e| format!("the client CA: {e}"))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder
            .with_single_cert(chain, key)
            .map_err(|e| e.to_string())?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }
}

/// A client's TLS: the CA that signed the server's certificate (none: the
/// system's roots are not used, so `https` then needs it), and a client
/// certificate for servers that require one.
#[derive(Clone, Default)]
pub struct ClientTls {
    pub ca: Option<Vec<u8>>,
    /// Certificate chain and key, PEM.
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
}

impl fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientTls")
            .field("ca", &self.ca.is_some())
            .field("identity", &self.identity.is_some())
            .finish()
    }
}

/// Why an address cannot be connected to.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error("{url:?} is not a URL: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("{url:?}: TLS options (a CA or a client certificate) need an https:// URL")]
    TlsNeedsHttps { url: String },
    #[error("{url:?}: {reason}")]
    Tls { url: String, reason: String },
}

/// The endpoint of a server at `url` (`http://` or `https://`), with TLS
/// when the URL says https.
pub fn endpoint(url: &str, tls: &ClientTls) -> Result<Endpoint, EndpointError> {
    let endpoint = Endpoint::from_shared(url.to_string()).map_err(|e| EndpointError::BadUrl {
        url: url.to_string(),
        reason: e.to_string(),
    })?;
    let https = url.starts_with("https://");
    if !https {
        if tls.ca.is_some() || tls.identity.is_some() {
            return Err(EndpointError::TlsNeedsHttps {
                url: url.to_string(),
            });
        }
        return Ok(endpoint);
    }
    let mut config = ClientTlsConfig::new();
    match &tls.ca {
        Some(ca) => config = config.ca_certificate(Certificate::from_pem(ca)),
        None => config = config.with_enabled_roots(),
    }
    if let Some((cert, key)) = &tls.identity {
        config = config.identity(Identity::from_pem(cert, key));
    }
    endpoint.tls_config(config).map_err(|e| EndpointError::Tls {
        url: url.to_string(),
        reason: e.to_string(),
    })
}

/// The secret that workers present to the coordinator where client
/// certificates are not set up (`authorization: Bearer TOKEN`).
#[derive(Clone)]
pub struct WorkerToken(String);

/// The shortest token taken: shorter ones are guessable.
pub const MIN_TOKEN_LEN: usize = 16;

impl WorkerToken {
    /// The token in `text` (surrounding whitespace ignored).
    pub fn new(text: &str) -> Result<WorkerToken, String> {
        let token = text.trim();
        if token.len() < MIN_TOKEN_LEN {
            return Err(format!(
                "the worker token must be at least {MIN_TOKEN_LEN} characters (it has {})",
                token.len()
            ));
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("the worker token must be printable ASCII without spaces".into());
        }
        Ok(WorkerToken(token.to_string()))
    }

    /// The value of the `authorization` header that carries it.
    pub fn header(&self) -> String {
        format!("Bearer {}", self.0)
    }

    /// Whether an `authorization` header carries this token, compared in
    /// constant time (over digests, so not even the length leaks).
    pub fn admits(&self, header: Option<&[u8]>) -> bool {
        use sha2::Digest;
        let Some(presented) = header.and_then(|h| h.strip_prefix(b"Bearer ")) else {
            return false;
        };
        let want = sha2::Sha256::digest(self.0.as_bytes());
        let got = sha2::Sha256::digest(presented);
        want.ct_eq(&got).into()
    }
}

impl fmt::Debug for WorkerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WorkerToken(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_admit_only_themselves() {
        let token = WorkerToken::new(" 0123456789abcdef\n").unwrap();
        assert!(token.admits(Some(b"Bearer 0123456789abcdef")));
        for wrong in [
            &b"Bearer 0123456789abcdeF"[..],
            b"Bearer 0123456789abcdef0",
            b"bearer 0123456789abcdef",
            b"0123456789abcdef",
            b"Bearer ",
        ] {
            assert!(!token.admits(Some(wrong)), "{wrong:?}");
        }
        assert!(!token.admits(None));
        assert!(WorkerToken::new("short").is_err());
        assert!(WorkerToken::new("0123456789 abcdef").is_err());
        assert_eq!(format!("{token:?}"), "WorkerToken(..)");
    }
}
