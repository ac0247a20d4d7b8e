"""The stored form of a body is a contract: frames name the pinned dictionary, and every frame
ever written (before the dictionary: none named) still reads.

- a long text is stored as a zstd frame naming `DICT_ID`, and `body.dict` is the pinned file;
- frames written by 8269a1a (no dictionary; golden bytes below) read back to their text;
- a frame naming a dictionary agentlog does not have is refused, never decoded as garbage.
"""

from __future__ import annotations

import hashlib

import pytest
import zstandard

from projections import body
from projections.body import pack, pack_many, unpack

LATIN = "pelican café naïve résumé — the quick brown fox jumps over the lazy dog. " * 6
CJK = "我们使用中文搜索引擎来查找历史记录，" * 12
# pack(LATIN), pack(CJK) as 8269a1a stored them (zstd level 1, no dictionary)
OLD_FRAMES = {
    LATIN: "28b52ffd60da00b50200a40470656c6963616e20636166c3a9206e61c3af76652072c3a973756dc3a920"
           "e280942074686520717569636b2062726f776e20666f78206a756d7073206f7665726c617a7920646f67"
           "2e2002008852500808419901",
    CJK: "28b52ffd608801fd01006403e68891e4bbace4bdbfe794a8e4b8ade69687e6909ce7b4a2e5bc95e6938e"
         "e69da5e69fa5e689bee58e86e58fb2e8aeb0e5bd95efbc8c0100f624570a0a",
}


def test_bodies_name_the_pinned_dictionary() -> None:
    with open(body.DICT_PATH, "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == body.DICT_SHA256
    for text in (LATIN, CJK):
        frame = pack(text)
        assert isinstance(frame, bytes)
        assert zstandard.get_frame_parameters(frame).dict_id == body.DICT_ID
        assert unpack(frame) == text
    assert pack_many([LATIN, CJK, "short"]) == [pack(LATIN), pack(CJK), "short"]


def test_frames_written_before_the_dictionary_still_read() -> None:
    for text, frame in OLD_FRAMES.items():
        old = bytes.fromhex(frame)
        assert zstandard.get_frame_parameters(old).dict_id == 0
        assert unpack(old) == text
        assert unpack(pack(text)) == text  # and the new frame of the same text


def test_a_frame_of_an_unknown_dictionary_is_refused() -> None:
    other = zstandard.train_dictionary(
        4096, [f"sample {i} of another dictionary, {i * 7919}".encode() * 3 for i in range(400)],
        dict_id=body.DICT_ID + 1)
    frame = zstandard.ZstdCompressor(level=1, dict_data=other).compress(LATIN.encode())
    assert zstandard.get_frame_parameters(frame).dict_id == body.DICT_ID + 1
    with pytest.raises(zstandard.ZstdError):
        unpack(frame)
