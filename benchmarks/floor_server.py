"""The floor under ``kq apiserver``'s cost per request: aiohttp with the same TLS that reads
each request's body and answers with a small fixed object, doing nothing else.

    .venv/bin/python benchmarks/floor_server.py CERT KEY   # prints "ready at https://..."
"""

from __future__ import annotations

import asyncio
import ssl
import sys

from aiohttp import web

REPLY = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "floor"}}


async def handle(request: web.Request) -> web.Response:
    await request.read()
    return web.json_response(REPLY)


async def serve(cert: str, key: str) -> None:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    app = web.Application()
    app.router.add_route("*", "/{path:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    print(f"ready at https://127.0.0.1:{runner.addresses[0][1]}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(serve(*sys.argv[1:3]))
