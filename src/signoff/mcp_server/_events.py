"""Resumable SSE streams for ``/mcp``: the SDK's ``EventStore``, kept in this worker's memory.

With an event store the SDK's transport opens every POST's SSE stream with a priming
event (an ``id`` and empty data, plus ``retry``, SEP-1699), and a client that lost the
stream reconnects with ``Last-Event-ID`` and gets what it missed. Bounded: the newest
``PER_STREAM`` events of the newest ``STREAMS`` streams; an older id replays nothing.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict, deque

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import JSONRPCMessage

STREAMS = 1000
PER_STREAM = 200
RETRY_MS = 1000
"""The reconnection delay the priming event suggests (SSE ``retry``)."""


class MemoryEventStore(EventStore):
    def __init__(self, *, streams: int = STREAMS, per_stream: int = PER_STREAM) -> None:
        self._streams: OrderedDict[StreamId, deque[tuple[int, JSONRPCMessage | None]]] = (
            OrderedDict()
        )
        self._max_streams = streams
        self._per_stream = per_stream
        self._counter = itertools.count(1)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        events = self._streams.get(stream_id)
        if events is None:
            events = self._streams[stream_id] = deque(maxlen=self._per_stream)
            while len(self._streams) > self._max_streams:
                self._streams.popitem(last=False)
        self._streams.move_to_end(stream_id)
        seq = next(self._counter)
        events.append((seq, message))
        return f"{stream_id}:{seq}"

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        stream_id, _, seq_text = last_event_id.rpartition(":")
        events = self._streams.get(stream_id)
        if events is None or not seq_text.isdigit():
            return None
        after = int(seq_text)
        for seq, message in list(events):
            if seq > after and message is not None:
                await send_callback(EventMessage(message, f"{stream_id}:{seq}"))
        return stream_id
