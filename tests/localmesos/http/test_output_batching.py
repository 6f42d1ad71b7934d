"""The embedded master's HTTP server sends what a connection has to say in a burst as one write: a
real server on a loopback socket, read by a plain client (a burst of events, then the stream's end)."""
from __future__ import annotations

import asyncio
import json

from localmesos.http.server import EventStream, HttpServer, StreamResponse, bind_socket

STARTS = ("socket",)  # the server binds and the client connects through asyncio


def test_a_burst_of_events_goes_out_in_one_write_and_the_end_after_it():
    async def main() -> tuple[bytes, list[int]]:
        writes: list[int] = []
        opened: asyncio.Future[EventStream] = asyncio.get_running_loop().create_future()
        server = HttpServer(lambda request: StreamResponse([("Content-Type", "application/json")], opened.set_result),
                            "test")
        await server.start(bind_socket("127.0.0.1", 0))
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"POST /api/v1/scheduler HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        stream = await opened
        transport = stream._out._writer.transport  # asyncio's, counted: what the kernel is handed
        original = transport.write
        transport.write = lambda data: (writes.append(len(data)), original(data))[1]  # type: ignore[method-assign]
        for n in range(3):  # one turn of the loop: one write
            stream.send({"type": "UPDATE", "n": n})
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        stream.send({"type": "UPDATE", "n": 3})
        stream.close()  # what is gathered, then the last chunk, before the connection goes
        data = await reader.read()
        writer.close()
        await server.close()
        return data, writes

    data, writes = asyncio.run(main())
    assert writes[0] > 3 * len('{"type":"UPDATE","n":0}') and len(writes) == 2, writes
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"Transfer-Encoding: chunked" in head and body.endswith(b"0\r\n\r\n")
    # chunks of RecordIO records: "<hex size>\r\n<record size>\n<JSON>\r\n"
    records = [json.loads(piece.split(b"\n", 1)[1]) for piece in body.split(b"\r\n") if b"\n" in piece]
    assert [r.get("n") for r in records] == [0, 1, 2, 3]
