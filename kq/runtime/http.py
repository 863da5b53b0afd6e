"""Keep-alive HTTP/1.1 connections for the API server's request/response calls.

aiohttp's client costs about 190 µs of CPU per request on top of the exchange itself (URL,
header and timer objects, payload and response wrappers): three times what a request to the
embedded server costs the client otherwise, and most of a controller's time under load. An
API call needs little of it: one host, JSON in and out, a body sized by Content-Length or sent
chunked. Watches, which stream, stay on aiohttp.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

from kubernetes_asyncio import client as k8s_client

_CRLF = b"\r\n"
_HEAD_END = b"\r\n\r\n"
_NO_BODY = frozenset({204, 304})
# Response heads and chunk-size lines longer than this fail the read (aiohttp allows 2 MiB too).
_READ_LIMIT = 2**21


class ConnectionLost(ConnectionError):
    """The server closed or broke the connection before the response was complete;
    ``unanswered`` when not one byte of a response had arrived."""

    def __init__(self, message: str, *, unanswered: bool = False) -> None:
        super().__init__(message)
        self.unanswered = unanswered


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    headers: dict[str, str]
    """Lower-cased names; a repeated header keeps its last value."""
    body: bytes


_Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class ConnectionPool:
    """Up to ``limit`` connections to one server, reused while the server keeps them open."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        tls: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        limit: int = 100,
    ) -> None:
        self._host = host
        self._port = port
        self._tls = tls
        self._server_hostname = server_hostname
        self._slots = asyncio.Semaphore(limit)
        self._idle: list[_Connection] = []
        default_port = 443 if tls is not None else 80
        authority = f"[{host}]" if ":" in host else host
        self.host_header = authority if port == default_port else f"{authority}:{port}"

    async def request(self, head: bytes, body: bytes | None, method: str) -> Response:
        """Send ``head`` (request line and headers, without the blank line) and ``body``.

        A kept-alive connection the server closed in the meantime fails before any byte of
        the response arrives; the request then goes once more on a new connection, as Go's
        client does, since the server never read it.
        """
        async with self._slots:
            connection = self._take_idle()
            if connection is not None:
                try:
                    return await self._exchange(connection, head, body, method)
                except ConnectionLost as exc:
                    if not exc.unanswered:
                        raise
            return await self._exchange(await self._open(), head, body, method)

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for _, writer in idle:
            writer.close()

    def _take_idle(self) -> _Connection | None:
        while self._idle:
            reader, writer = self._idle.pop()
            if not reader.at_eof() and not writer.is_closing():
                return reader, writer
            writer.close()
        return None

    async def _open(self) -> _Connection:
        return await asyncio.open_connection(
            self._host,
            self._port,
            ssl=self._tls,
            server_hostname=(self._server_hostname or self._host) if self._tls else None,
            limit=_READ_LIMIT,
        )

    async def _exchange(
        self, connection: _Connection, head: bytes, body: bytes | None, method: str
    ) -> Response:
        reader, writer = connection
        try:
            length = b"" if body is None else b"Content-Length: %d\r\n" % len(body)
            writer.write(b"".join((head, length, _CRLF, body or b"")))
            response, keep = await _read_response(reader, method)
        except BaseException:
            writer.close()  # never reuse a connection in an unknown state
            raise
        if keep:
            self._idle.append(connection)
        else:
            writer.close()
        return response


async def _read_response(reader: asyncio.StreamReader, method: str) -> tuple[Response, bool]:
    try:
        raw_head = await reader.readuntil(_HEAD_END)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise ConnectionLost("response head cut short") from exc
        raise ConnectionLost("closed before responding", unanswered=True) from exc
    except ConnectionResetError as exc:
        raise ConnectionLost("reset before responding", unanswered=True) from exc
    lines = raw_head[: -len(_HEAD_END)].split(_CRLF)
    version, _, rest = lines[0].partition(b" ")
    try:
        status = int(rest[:3])
    except ValueError as exc:
        raise ConnectionLost(f"not an HTTP response: {lines[0][:60]!r}") from exc
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
    keep = version == b"HTTP/1.1" and headers.get("connection", "").lower() != "close"
    try:
        if method == "HEAD" or status in _NO_BODY or 100 <= status < 200:
            body = b""
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            body = await _read_chunked(reader)
        elif "content-length" in headers:
            body = await reader.readexactly(int(headers["content-length"]))
        else:
            body, keep = await reader.read(), False
    except asyncio.IncompleteReadError as exc:
        raise ConnectionLost("response body cut short") from exc
    return Response(status, headers, body), keep


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    while True:
        size_line = await reader.readuntil(_CRLF)
        size = int(size_line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            while await reader.readuntil(_CRLF) != _CRLF:
                pass  # trailers carry nothing an API client reads
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)


def connection_pool(api: k8s_client.ApiClient) -> tuple[ConnectionPool | None, str]:
    """kq's own connections to the configured server, and the server URL's path prefix;
    none behind a proxy, which aiohttp's session handles."""
    configuration = api.configuration
    url = urlsplit(str(configuration.host))
    if api.rest_client.proxy or url.scheme not in ("http", "https") or not url.hostname:
        return None, ""
    tls = None
    if url.scheme == "https":
        # As kubernetes_asyncio builds the context of its own session.
        tls = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
        if configuration.cert_file:
            tls.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
        if not configuration.verify_ssl:
            tls.check_hostname = False
            tls.verify_mode = ssl.CERT_NONE
        if getattr(configuration, "disable_strict_ssl_verification", False):
            tls.verify_flags &= ~ssl.VERIFY_X509_STRICT
    pool = ConnectionPool(
        url.hostname,
        url.port or (443 if tls is not None else 80),
        tls=tls,
        server_hostname=configuration.tls_server_name,
        limit=configuration.connection_pool_maxsize,
    )
    return pool, url.path.rstrip("/")
