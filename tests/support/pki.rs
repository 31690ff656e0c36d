//! A CA made for a test run, with a server and a client certificate, as PEM
//! files; and the broker flags of every Kafka listener that use them.

/// A CA, a server certificate for 127.0.0.1 and localhost, and a client
/// certificate, as PEM files in a temporary directory.
pub(crate) struct Pki {
    pub dir: tempfile::TempDir,
    /// The client certificate's DER, to check the principal it names.
    pub client_der: Vec<u8>,
}

impl Pki {
    pub(crate) fn new() -> Self {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
            KeyUsagePurpose,
        };
        let dir = tempfile::tempdir().expect("temp dir");
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "queen test CA");
        ca.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca.self_signed(&ca_key).expect("CA certificate");

        let server_key = KeyPair::generate().expect("server key");
        let mut server =
            CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
                .expect("server params");
        server
            .distinguished_name
            .push(DnType::CommonName, "localhost");
        server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server_cert = server
            .signed_by(&server_key, &ca_cert, &ca_key)
            .expect("server certificate");

        let client_key = KeyPair::generate().expect("client key");
        let mut client = CertificateParams::new(Vec::<String>::new()).expect("client params");
        // Encoded as O then CN (rcgen's default DN would put CN first).
        client.distinguished_name = rcgen::DistinguishedName::new();
        client
            .distinguished_name
            .push(DnType::OrganizationName, "queen-tests");
        client.distinguished_name.push(DnType::CommonName, "client");
        client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let client_cert = client
            .signed_by(&client_key, &ca_cert, &ca_key)
            .expect("client certificate");

        for (name, pem) in [
            ("ca.pem", ca_cert.pem()),
            ("server.pem", server_cert.pem()),
            ("server.key", server_key.serialize_pem()),
            ("client.pem", client_cert.pem()),
            ("client.key", client_key.serialize_pem()),
        ] {
            std::fs::write(dir.path().join(name), pem).expect("write PEM");
        }
        Self {
            dir,
            client_der: client_cert.der().to_vec(),
        }
    }

    pub(crate) fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    /// The broker flags of the four listeners and the TLS material.
    pub(crate) fn flags(&self, client_auth: &str) -> Vec<String> {
        [
            "--kafka-listeners",
            "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
            "--kafka-ssl-cert",
            &self.path("server.pem"),
            "--kafka-ssl-key",
            &self.path("server.key"),
            "--kafka-ssl-client-ca",
            &self.path("ca.pem"),
            "--kafka-ssl-client-auth",
            client_auth,
        ]
        .map(str::to_owned)
        .to_vec()
    }
}
