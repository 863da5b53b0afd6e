"""kq's keep-alive HTTP/1.1 connections, against servers that answer byte by byte."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from kq.runtime.http import ConnectionLost, ConnectionPool

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
HEAD = b"GET /x HTTP/1.1\r\nHost: h\r\n"


@asynccontextmanager
async def server(handler: Handler) -> AsyncIterator[tuple[ConnectionPool, list[int]]]:
    """A TCP server running ``handler`` per connection; yields a pool and the connection count."""
    connections: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        try:
            await handler(reader, writer)
        finally:
            writer.close()

    listener = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    pool = ConnectionPool("127.0.0.1", port)
    try:
        yield pool, connections
    finally:
        await pool.close()
        listener.close()


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return await reader.readexactly(length)


async def test_keeps_the_connection_and_sends_the_body_with_its_length() -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            body = await read_request(reader)
            writer.write(
                b"HTTP/1.1 201 Created\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
            )

    async with server(echo) as (pool, connections):
        for payload in (b'{"a":1}', b'{"b":2}'):
            response = await pool.request(HEAD, payload, "POST")
            assert (response.status, response.body) == (201, payload)
    assert len(connections) == 1


async def test_reads_chunked_bodies_and_headers_case_insensitively() -> None:
    async def chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(
            b"HTTP/1.1 200 OK\r\nTRANSFER-Encoding: chunked\r\nRetry-After: 3\r\n\r\n"
            b'4;ext=1\r\n{"a"\r\n3\r\n:1}\r\n0\r\nTrailer: x\r\n\r\n'
        )
        await reader.read()

    async with server(chunked) as (pool, _):
        response = await pool.request(HEAD, None, "GET")
    assert response.body == b'{"a":1}'
    assert response.headers["retry-after"] == "3"


async def test_connection_close_and_bodies_without_length_are_not_reused() -> None:
    async def closing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{}")

    async with server(closing) as (pool, connections):
        assert (await pool.request(HEAD, None, "GET")).body == b"{}"
        assert (await pool.request(HEAD, None, "GET")).body == b"{}"
    assert len(connections) == 2


async def test_a_kept_connection_the_server_dropped_is_replaced_once() -> None:
    async def one_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
        await reader.readuntil(b"\r\n\r\n")  # the next request: closed without a word

    async with server(one_answer) as (pool, connections):
        await pool.request(HEAD, None, "GET")
        assert (await pool.request(HEAD, b"{}", "POST")).status == 200
    assert len(connections) == 2


async def test_a_response_cut_short_is_an_error_not_a_retry() -> None:
    async def cut(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}")

    async with server(cut) as (pool, connections):
        with pytest.raises(ConnectionLost, match="cut short"):
            await pool.request(HEAD, None, "GET")
    assert len(connections) == 1


async def test_no_body_is_read_for_204_and_head() -> None:
    async def empty(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await read_request(reader)
            writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")

    async with server(empty) as (pool, connections):
        for _ in range(2):
            assert (await pool.request(HEAD, None, "DELETE")).body == b""
    assert len(connections) == 1
