//! TLS for `gatehouse serve --tls-cert/--tls-key` (rustls), reloaded from the
//! same files on SIGHUP so a renewed certificate needs no restart. A reload
//! that fails keeps the running configuration and says why.

use std::sync::{Arc, RwLock};

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

use super::TlsFiles;
use crate::error::{Error, Result, codes};

/// The acceptor of the files as last read.
#[derive(Clone)]
pub struct Reloading {
    // Reloaded on SIGHUP, which only Unix has.
    #[cfg_attr(not(unix), allow(dead_code))]
    files: TlsFiles,
    current: Arc<RwLock<TlsAcceptor>>,
}

impl Reloading {
    pub fn load(files: TlsFiles) -> Result<Reloading> {
        let acceptor = read(&files)?;
        Ok(Reloading {
            files,
            current: Arc::new(RwLock::new(acceptor)),
        })
    }

    pub fn current(&self) -> TlsAcceptor {
        self.current.read().expect("lock").clone()
    }

    #[cfg_attr(not(unix), allow(dead_code))]
    pub fn reload(&self) -> Result<()> {
        let acceptor = read(&self.files)?;
        *self.current.write().expect("lock") = acceptor;
        Ok(())
    }
}

fn invalid(what: &str, path: &std::path::Path, e: impl std::fmt::Display) -> Error {
    Error::new(
        codes::TLS_INVALID,
        format!("cannot use the TLS {what} {}: {e}", path.display()),
    )
    .hint("give PEM files: --tls-cert the certificate chain, --tls-key its private key")
}

fn read(files: &TlsFiles) -> Result<TlsAcceptor> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| invalid("certificate", &files.cert, e))?
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| invalid("certificate", &files.cert, e))?;
    if certs.is_empty() {
        return Err(invalid(
            "certificate",
            &files.cert,
            "no certificate in the file",
        ));
    }
    let key =
        PrivateKeyDer::from_pem_file(&files.key).map_err(|e| invalid("key", &files.key, e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid("certificate", &files.cert, e))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| invalid("key", &files.key, e))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Rereads the files on every SIGHUP.
#[cfg(unix)]
pub async fn reload_on_hangup(tls: Reloading) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hup) = signal(SignalKind::hangup()) else {
        return;
    };
    while hup.recv().await.is_some() {
        match tls.reload() {
            Ok(()) => tracing::info!("TLS certificate reloaded"),
            Err(e) => {
                tracing::error!(code = %e.code, message = %e.message, "TLS reload failed; keeping the running certificate")
            }
        }
    }
}
