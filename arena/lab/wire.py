"""What a lab process reads off the wire from a peer it does not trust, before Dask decodes any of it.

Dask decodes a message in one step (`distributed.protocol.loads`): its first frame is msgpack, and any
object in it marked `__Pickled__` (Dask's `ToPickle`) is unpickled then and there, whatever the comm's
`deserialize` flag, whatever `deserializers` the reader asked for, and before any handler (or arena's
guard, which reads the op) sees the message. Unpickling runs code the sender chose. So a lab's processes
read every TLS connection through `Backend` here, Dask's own TLS comm with one step added between reading
a message's frames and decoding them: a message from a peer whose certificate is not trusted with
pickles (`judge`) must be plain data, else the connection is closed and nothing of it decoded:
  - its first frame msgpack, no object in it marked `__Pickled__`, `__Enum__` or the inline
    `__Serialized__` form;
  - every `__Serialized__` object (Dask's out-of-band frames) serialized by Dask's "msgpack" serializer,
    whose sub-header is itself plain msgpack; never "pickle", "dask" (a pickled type), "cuda" or another.
This holds for every message of the connection, the handshake included, whichever end opened it: the
scheduler reading a worker's batched stream or its `get_data` answer, a worker fetching a bot from
another, a nanny, the coordinator's client.

Checked against distributed 2026.8 (TCP.read, protocol.core.loads, serialize.msgpack_decode_default): a
Dask whose wire format changes is to be checked again (tests/test_cluster_wire.py tries it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import msgpack  # type: ignore[import-untyped]

log = logging.getLogger("arena")
# Why a peer's message is refused, or None: it may send pickles (a trusted role), else its frames are read
Judge = Callable[[dict[str, Any] | None], str | None]
SCHEME = "arena-tls"  # the coordinator's own name for Dask's TLS, read through `nobody`
TRUSTED = "trusted"  # what a Judge says of a peer whose pickles are taken
SERIALIZERS = frozenset({"msgpack"})  # Dask's serializers whose data is plain (msgpack_loads)
COLLECTIONS = frozenset({"tuple", "list", "set", "dict"})  # Dask's words for a collection's type
MARKED = (b"__Pickled__", b"__Enum__", b"__Serialized__")  # the marks as msgpack writes them
MARKS = ("__Pickled__", "__Enum__", "__Serialized__")


class NotPlain(ValueError):
    """A message that is not plain data: why, in words."""


def check(frames: Sequence[Any]) -> None:
    """Raise NotPlain unless the message of `frames` decodes to plain data with no code of the sender's."""
    if not frames:
        raise NotPlain("a message of no frames")
    head = frames[0] if isinstance(frames[0], bytes) else bytes(frames[0])
    if len(frames) == 1 and not any(mark in head for mark in MARKED):
        return  # no mark anywhere in its bytes (msgpack keeps a key's text as it is): decoded as it is
    for offset in _marks(head, top=True):
        if not 0 < offset < len(frames):
            raise NotPlain(f"a serialized object at frame {offset} of {len(frames)}")
        _serialized(_header(frames[offset]))


def _serialized(header: object) -> None:
    """NotPlain unless `header` is of an object Dask's msgpack serializer wrote, or of a collection
    (tuple, list, set, dict: Dask names its type in words) of such objects."""
    if not isinstance(header, dict):
        raise NotPlain("a serialized object without its header")
    if "is-collection" in header:
        if header.get("type-serialized") not in COLLECTIONS:
            raise NotPlain(f"a collection of type {header.get('type-serialized')!r}")
        parts = header.get("sub-headers")
        if not isinstance(parts, (list, tuple)):
            raise NotPlain("a collection without its parts")
        for part in parts:
            _serialized(part)
    elif header.get("serializer") not in SERIALIZERS:
        raise NotPlain(f"an object serialized by {header.get('serializer')!r}")


def _marks(frame: Any, top: bool) -> list[int]:
    """The frame offsets of the `__Serialized__` objects in `frame` (msgpack); NotPlain for any other mark
    (or any at all below the top frame)."""
    found: list[int] = []

    def hook(obj: dict[Any, Any]) -> dict[Any, Any]:
        for mark in MARKS:
            if mark in obj:
                value = obj[mark]
                if mark != "__Serialized__" or not top or type(value) is not int:
                    raise NotPlain(f"an object marked {mark}")
                found.append(value)
        return obj

    try:
        msgpack.loads(frame, object_hook=hook, use_list=False, strict_map_key=False, raw=False)
    except NotPlain:
        raise
    except Exception as e:
        raise NotPlain(f"not msgpack ({type(e).__name__})") from None
    return found


def _header(frame: Any) -> object:
    """A serialized object's sub-header: plain msgpack itself."""
    _marks(frame, top=False)
    return msgpack.loads(frame, use_list=False, strict_map_key=False, raw=False)


def nobody(cert: dict[str, Any] | None) -> str | None:
    """The coordinator's judge: no peer trusted with pickles, the scheduler neither (it relays what
    workers hold); arena asks only for plain data (Client(deserializers=["msgpack"]))."""
    return None


def backend(judge: Judge) -> Any:
    """Dask's TLS comm back end, each of its connections (accepted or opened) reading its peer through
    `judge`: refused at once (a revoked certificate), read as plain data, or trusted."""
    from distributed.comm.core import CommClosedError
    from distributed.comm.tcp import (
        TLS,
        SSLError,
        StreamClosedError,
        TLSBackend,
        TLSConnector,
        TLSListener,
        convert_stream_closed_error,
        from_frames,
        read_bytes_rw,
        struct,
        unpack_frames,
    )

    class GuardedTLS(TLS):
        def _read_extra(self) -> None:
            super()._read_extra()
            self.arena_verdict = judge(self._extra.get("peercert"))

        async def read(self, deserializers: Any = None) -> Any:
            # distributed.comm.tcp.TCP.read (2026.8), the frames checked before from_frames decodes them
            stream = self.stream
            if stream is None:
                raise CommClosedError()
            if self.arena_verdict not in (None, TRUSTED):
                self._refuse(self.arena_verdict)
            fmt = "Q"
            try:
                (total,) = struct.unpack(fmt, await stream.read_bytes(struct.calcsize(fmt)))
                frames, buffers = unpack_frames(await read_bytes_rw(stream, total), partial=True)
                for size in buffers:
                    frames.append(await read_bytes_rw(stream, size))
            except (StreamClosedError, SSLError) as e:
                self.stream = None
                self._closed = True
                convert_stream_closed_error(self, e)
            except BaseException:
                self.abort()
                raise
            if self.arena_verdict is None:
                try:
                    check(frames)
                except NotPlain as e:
                    self._refuse(f"it sent {e}")
            try:
                return await from_frames(
                    frames,
                    deserialize=self.deserialize,
                    deserializers=deserializers,
                    allow_offload=self.allow_offload,
                )
            except EOFError:
                self.abort()
                raise CommClosedError("aborted stream on truncated data") from None

        def _refuse(self, why: str) -> None:
            log.warning(f"arena: closed the connection with {self.peer_address}: {why}")
            self.abort()
            raise CommClosedError(f"arena: {self.peer_address} refused: {why}")

    class Connector(TLSConnector):
        comm_class = GuardedTLS

    class Listener(TLSListener):
        comm_class = GuardedTLS

    class Guarded(TLSBackend):
        _connector_class = Connector
        _listener_class = Listener
        comm_class = GuardedTLS  # for a listener made before the back end was installed

    return Guarded()


def install(judge: Judge, listeners: Sequence[Any] = ()) -> None:
    """Every TLS connection this process makes or accepts from now on read through `judge`, those the
    `listeners` made already accept too (a lab process's guard: the process is Dask's alone)."""
    from distributed.comm import registry
    from distributed.comm.tcp import TLSListener

    guarded = registry.backends["tls"] = backend(judge)
    for listener in listeners:
        if isinstance(listener, TLSListener):
            listener.comm_class = guarded.comm_class


def plain(address: str) -> str:
    """`address` (tls://HOST:PORT) as the coordinator's client reaches it: through Dask's TLS, every
    message read as plain data (`nobody`), under a scheme of its own (SCHEME) so that nothing else in
    the process (a scheduler of a test, another client) changes how it reads."""
    from distributed.comm import registry

    if SCHEME not in registry.backends:
        registry.backends[SCHEME] = backend(nobody)
    return SCHEME + address.removeprefix("tls")
