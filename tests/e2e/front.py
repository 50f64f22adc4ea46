"""What docs/deploy.md's nginx does, for the tests that run the site as shipped.

``Front`` listens on 127.0.0.1 with TLS (a self-signed certificate made
here), and hands each browser connection to one of the server processes, in
turn (round robin, page requests and WebSockets each in their own turn,
passing over a process that refuses, as nginx's ``fail_timeout`` does),
adding to every request what the documented proxy adds:
``X-Forwarded-For`` (the client's address, replacing any sent) and
``X-Forwarded-Proto: https``. The browser's ``Host`` goes through as sent. A
WebSocket upgrade is passed through, after which the bytes flow both ways
untouched. It runs as a process of its own (``python tests/e2e/front.py
CERT KEY PORT...``); ``accepted`` and ``upgraded`` say which backend each
connection and each WebSocket went to.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import re
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

# Headers the proxy sets itself: a client's own are dropped (docs/deploy.md:
# "X-Forwarded-For $remote_addr replaces what the client sent").
_SET = (b"x-forwarded-for", b"x-forwarded-proto")
Reader, Writer = asyncio.StreamReader, asyncio.StreamWriter


def self_signed(folder: Path, host: str = "127.0.0.1") -> tuple[Path, Path]:
    """A certificate for ``host`` and its key, as PEM files in ``folder``."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "front.crt", folder / "front.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@dataclass
class Front:
    """A TLS front on 127.0.0.1 for the server processes on ``backends`` (ports),
    run as a process of its own (as nginx is: the test process's threads and
    the browser's event loop stay out of it)."""

    backends: list[int]
    folder: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.folder / "front.log"

    def start(self, timeout: float = 10.0) -> Front:
        cert, key = self_signed(self.folder)
        args = [sys.executable, __file__, str(cert), str(key), *map(str, self.backends)]
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while not (found := re.search(r"^listening (\d+)$", self._log(), re.M)):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"the TLS front did not start:\n{self._log()}")
            time.sleep(0.05)
        self.port = int(found.group(1))
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def _log(self) -> str:
        return self.log_path.read_text(errors="replace")

    @property
    def accepted(self) -> list[int]:
        """The backend each connection went to, in order."""
        return [int(port) for port in re.findall(r"^accepted (\d+)$", self._log(), re.M)]

    @property
    def upgraded(self) -> list[int]:
        """The backend each WebSocket went to, in order."""
        return [int(port) for port in re.findall(r"^upgraded (\d+)$", self._log(), re.M)]


@dataclass
class _Proxy:
    """The front's work, in its own process."""

    backends: list[int]
    # Whose turn it is, for page requests and for WebSockets apart: a page's
    # socket then goes to the next process whatever its requests did.
    turns: dict[bool, int] = field(default_factory=lambda: {False: 0, True: 0})

    async def backend(
        self, upgrade: bool
    ) -> tuple[int, asyncio.StreamReader, asyncio.StreamWriter]:
        """The next backend in turn that accepts a connection."""
        last: OSError | None = None
        for _ in range(len(self.backends)):
            port = self.backends[self.turns[upgrade] % len(self.backends)]
            self.turns[upgrade] += 1
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError as error:
                last = error
                continue
            return port, reader, writer
        raise last or OSError("no backend")

    async def client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        client_ip = writer.get_extra_info("peername")[0]
        try:
            # The backend is chosen by the connection's first request.
            head, length, upgrade = _forwarded(await reader.readuntil(b"\r\n\r\n"), client_ip)
            port, up_reader, up_writer = await self.backend(upgrade)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            writer.close()
            return
        print("accepted", port, flush=True)
        answers = asyncio.ensure_future(_pipe(up_reader, writer))
        try:
            while True:
                up_writer.write(head)
                if upgrade:
                    print("upgraded", port, flush=True)
                    await _pipe(reader, up_writer)
                    break
                if length:
                    up_writer.write(await reader.readexactly(length))
                await up_writer.drain()
                head, length, upgrade = _forwarded(await reader.readuntil(b"\r\n\r\n"), client_ip)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            pass
        finally:
            up_writer.close()
            with contextlib.suppress(OSError):
                await answers
            writer.close()


async def _serve(cert: str, key: str, backends: list[int]) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    proxy = _Proxy(backends)
    # readuntil's limit (64 KB) bounds a request head, as nginx's buffers do.
    server = await asyncio.start_server(proxy.client, "127.0.0.1", 0, ssl=context)
    print("listening", server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


def _forwarded(head: bytes, client_ip: str) -> tuple[bytes, int, bool]:
    """The request head as the proxy sends it on, its body's length, and
    whether it asks for a WebSocket."""
    lines = head[:-4].split(b"\r\n")
    kept = [lines[0]]
    length, upgrade = 0, False
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        lowered = name.strip().lower()
        if lowered in _SET:
            continue
        if lowered == b"content-length":
            length = int(value.strip())
        if lowered == b"upgrade" and value.strip().lower() == b"websocket":
            upgrade = True
        kept.append(line)
    kept += [b"X-Forwarded-For: " + client_ip.encode(), b"X-Forwarded-Proto: https"]
    return b"\r\n".join(kept) + b"\r\n\r\n", length, upgrade


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            writer.close()


if __name__ == "__main__":
    asyncio.run(_serve(sys.argv[1], sys.argv[2], [int(port) for port in sys.argv[3:]]))
