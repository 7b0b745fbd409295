//! What every client of a coordinator needs (workers, `tilepdb-solve fetch`, `status`): its
//! [`Endpoint`] — the address, the shared token (read from a file or `TILEPDB_TOKEN` and sent
//! with every call) and the TLS settings — and a channel to it.
//!
//! ```
//! use tilepdb_common::wire::connect::{Auth, Endpoint, channel};
//! // A channel connects lazily: nothing is contacted until the first call.
//! let rt = tokio::runtime::Runtime::new().unwrap();
//! let _guard = rt.enter();
//! assert!(channel("http://127.0.0.1:7878", None, None).is_ok());
//! assert!(channel("not a url", None, None).is_err());
//! let endpoint = Endpoint::new("http://127.0.0.1:7878");
//! assert!(endpoint.channel().is_ok() && endpoint.auth().is_ok());
//! // A shard's peer: another address, the same token and TLS settings.
//! assert_eq!(endpoint.at("http://10.0.0.2:7879").address, "http://10.0.0.2:7879");
//! assert!(Auth::new(Some("s3cret")).is_ok());
//! assert!(Auth::new(Some("two\nlines")).is_err()); // tokens are printable ASCII
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::transport::{self, Certificate, Channel, ClientTlsConfig};
use tonic::{Request, Status};

use super::AUTH_HEADER;
use crate::error::{Error, Result};

/// Where a client reaches a server of this project (a coordinator, a table server, a shard's
/// peer) and how it proves itself: the one place that holds these settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Endpoint {
    /// `http://HOST:PORT` or `https://HOST:PORT`.
    pub address: String,
    /// The shared token, if the server wants one.
    pub token: Option<String>,
    /// CA certificate (PEM) that signed the server's certificate, for `https://`.
    pub tls_ca: Option<PathBuf>,
    /// The name the server's certificate is for, if not the host of the address.
    pub tls_domain: Option<String>,
}

impl Endpoint {
    /// The server at `address`, without a token or TLS settings.
    pub fn new(address: impl Into<String>) -> Endpoint {
        Endpoint {
            address: address.into(),
            ..Endpoint::default()
        }
    }

    /// The same token and TLS settings for the server at `address`.
    #[must_use]
    pub fn at(&self, address: impl Into<String>) -> Endpoint {
        Endpoint {
            address: address.into(),
            ..self.clone()
        }
    }

    /// A lazy channel to the server ([`channel`]). Must be called inside a tokio runtime.
    pub fn channel(&self) -> Result<Channel> {
        channel(
            &self.address,
            self.tls_ca.as_deref(),
            self.tls_domain.as_deref(),
        )
    }

    /// The interceptor that sends the token with every call.
    pub fn auth(&self) -> Result<Auth> {
        Auth::new(self.token.as_deref())
    }
}

/// The environment variable that holds the shared token.
pub const TOKEN_ENV: &str = "TILEPDB_TOKEN";

/// The shared token: from `file` if given (surrounding white space ignored), else the
/// `TILEPDB_TOKEN` environment variable; `None` if neither gives one.
pub fn read_token(file: Option<&Path>) -> Result<Option<String>> {
    match file {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                Error::Connect(format!("cannot read token file {}: {e}", path.display()))
            })?;
            let token = text.trim().to_string();
            if token.is_empty() {
                return Err(Error::Connect(format!(
                    "token file {} is empty",
                    path.display()
                )));
            }
            Ok(Some(token))
        }
        None => Ok(std::env::var(TOKEN_ENV)
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())),
    }
}

/// Adds the shared token to every call.
#[derive(Clone)]
pub struct Auth(Option<MetadataValue<Ascii>>);

impl Auth {
    /// Sends `token` (if any) as `authorization: Bearer <token>`.
    pub fn new(token: Option<&str>) -> Result<Auth> {
        token
            .map(|t| {
                format!("Bearer {t}")
                    .parse()
                    .map_err(|_| Error::Connect("the token must be printable ASCII".into()))
            })
            .transpose()
            .map(Auth)
    }
}

impl Interceptor for Auth {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(v) = &self.0 {
            request.metadata_mut().insert(AUTH_HEADER, v.clone());
        }
        Ok(request)
    }
}

/// A channel to the coordinator at `address` (`http://HOST:PORT` or `https://HOST:PORT`),
/// connecting lazily and reconnecting as needed. TLS is used for `https://` or when a CA
/// certificate (PEM) is given; `tls_domain` is the name the coordinator's certificate is
/// for, if not the address's host. Must be called inside a tokio runtime.
pub fn channel(address: &str, tls_ca: Option<&Path>, tls_domain: Option<&str>) -> Result<Channel> {
    let bad =
        |reason: String| Error::Connect(format!("bad coordinator address {address:?}: {reason}"));
    if !(address.starts_with("http://") || address.starts_with("https://")) {
        return Err(bad("expected http://HOST:PORT or https://HOST:PORT".into()));
    }
    let mut endpoint = transport::Endpoint::from_shared(address.to_string())
        .map_err(|e| bad(e.to_string()))?
        .connect_timeout(Duration::from_secs(5))
        .tcp_nodelay(true)
        .http2_keep_alive_interval(Duration::from_secs(10))
        .keep_alive_timeout(Duration::from_secs(20));
    if address.starts_with("https://") || tls_ca.is_some() {
        let mut tls = ClientTlsConfig::new();
        if let Some(path) = tls_ca {
            let pem = std::fs::read(path).map_err(|e| {
                Error::Connect(format!(
                    "cannot read CA certificate {}: {e}",
                    path.display()
                ))
            })?;
            tls = tls.ca_certificate(Certificate::from_pem(pem));
        }
        if let Some(domain) = tls_domain {
            tls = tls.domain_name(domain);
        }
        endpoint = endpoint.tls_config(tls).map_err(|e| bad(e.to_string()))?;
    }
    Ok(endpoint.connect_lazy())
}
