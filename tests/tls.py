"""A redis-server that speaks only TLS, with certificates made for the test.

``make_certificates`` runs the openssl command line: a certificate authority,
a server certificate for 127.0.0.1 and a client certificate, both signed by
it. ``TlsRedis`` starts ``redis-server --port 0 --tls-port …`` with them,
checking client certificates (``tls-auth-clients yes``) or not (``no``).
Its ``url`` is what a user writes: ``rediss://`` with redis-py's ``ssl_*``
options in the query string.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

from queues.redis_server import LocalRedisServer, server_binary
from tests.e2e.server import free_port


@dataclass(frozen=True)
class Certificates:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_certificates(folder: Path) -> Certificates:
    """A CA and two certificates it signed (server: IP 127.0.0.1; client), valid a day."""
    folder.mkdir(parents=True, exist_ok=True)
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key", cwd=folder)
    _openssl(
        "req", "-x509", "-new", "-key", "ca.key", "-sha256", "-days", "1",
        "-subj", "/CN=echomq test CA", "-out", "ca.pem",
        cwd=folder,
    )  # fmt: skip
    for name, extension in (
        ("server", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth"),
        ("client", "extendedKeyUsage=clientAuth"),
    ):
        (folder / f"{name}.ext").write_text(extension + "\n")
        _openssl(
            "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", f"{name}.key",
            cwd=folder,
        )  # fmt: skip
        _openssl(
            "req", "-new", "-key", f"{name}.key", "-subj", f"/CN=echomq {name}",
            "-out", f"{name}.csr",
            cwd=folder,
        )  # fmt: skip
        _openssl(
            "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "1", "-sha256", "-extfile", f"{name}.ext",
            "-out", f"{name}.pem",
            cwd=folder,
        )  # fmt: skip
    return Certificates(
        folder / "ca.pem",
        folder / "server.pem",
        folder / "server.key",
        folder / "client.pem",
        folder / "client.key",
    )


def tls_settings(certificates: Certificates, port: int, *, check_clients: bool) -> tuple[str, ...]:
    """A redis-server's (or a sentinel's) TLS settings, as command-line options:
    TLS on ``port``, to its replicas and other sentinels too."""
    return (
        "--tls-port", str(port),
        "--tls-cert-file", str(certificates.server_cert),
        "--tls-key-file", str(certificates.server_key),
        "--tls-ca-cert-file", str(certificates.ca),
        "--tls-auth-clients", "yes" if check_clients else "no",
        "--tls-replication", "yes",
    )  # fmt: skip


def url_options(certificates: Certificates, check_clients: bool) -> str:
    """A URL's query string: the CA that signed the server; the client
    certificate and key when the server checks clients (redis-py's names)."""
    options = {"ssl_ca_certs": str(certificates.ca), "ssl_cert_reqs": "required"}
    if check_clients:
        options["ssl_certfile"] = str(certificates.client_cert)
        options["ssl_keyfile"] = str(certificates.client_key)
    return urlencode(options)


def client_options(certificates: Certificates) -> dict[str, object]:
    """redis-py's keyword arguments for a test's own TLS client."""
    return {
        "ssl": True,
        "ssl_ca_certs": str(certificates.ca),
        "ssl_certfile": str(certificates.client_cert),
        "ssl_keyfile": str(certificates.client_key),
    }


@dataclass
class TlsRedis:
    """redis-server with TLS only on a TCP port (its unix socket, for nobody
    but its own readiness check, stays plain)."""

    certificates: Certificates
    check_clients: bool
    port: int = field(default_factory=free_port)
    server: LocalRedisServer | None = None

    def start(self) -> TlsRedis:
        args = tls_settings(self.certificates, self.port, check_clients=self.check_clients)
        # port 0: no plain TCP port at all.
        self.server = LocalRedisServer(server_binary()[0], port=0, extra_args=args).start()
        return self

    @property
    def url(self) -> str:
        return (
            f"rediss://127.0.0.1:{self.port}/0?{url_options(self.certificates, self.check_clients)}"
        )

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
