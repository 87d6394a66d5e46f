#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (fuzz/corpus/<target>/), small inputs that reach
each target's main paths; libFuzzer mutates from them. Deterministic: rerunning gives the same
files. usage: fuzz/make_seeds.py [OUT_DIR]   (default: fuzz/corpus next to this script)"""
import os
import random
import struct
import sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
rng = random.Random(20261203)


def write(target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(bytes(data))


# ---- GGUF (the specification's layout, little-endian)
def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, payload):
    return gstr(key) + struct.pack("<I", vtype) + payload


TYPES = {"f32": (0, 1, 4), "f16": (1, 1, 2), "q4_0": (2, 32, 18), "q8_0": (8, 32, 34), "q4_K": (12, 256, 144),
         "q6_K": (14, 256, 210), "i8": (24, 1, 1), "i32": (26, 1, 4), "f64": (28, 1, 8), "bf16": (30, 1, 2)}


def gguf(version, metadata, tensors, alignment=32):
    head = b"GGUF" + struct.pack("<I", version) + struct.pack("<QQ", len(tensors), len(metadata))
    head += b"".join(metadata)
    infos, blobs, offset = b"", [], 0
    for name, tname, shape in tensors:
        num, per, nbytes = TYPES[tname]
        count = 1
        for e in shape:
            count *= e
        size = count // per * nbytes
        infos += gstr(name) + struct.pack("<I", len(shape)) + b"".join(struct.pack("<Q", e) for e in shape)
        infos += struct.pack("<IQ", num, offset)
        blobs.append((offset, bytes(rng.randrange(256) for _ in range(size))))
        offset += (size + alignment - 1) // alignment * alignment
    body = head + infos
    body += b"\0" * ((-len(body)) % alignment)
    data = bytearray(offset)
    for o, b in blobs:
        data[o:o + len(b)] = b
    return body + bytes(data)


meta = [
    kv("general.architecture", 8, gstr("llama")),
    kv("u8", 0, struct.pack("<B", 7)), kv("i8", 1, struct.pack("<b", -7)),
    kv("u16", 2, struct.pack("<H", 700)), kv("i16", 3, struct.pack("<h", -700)),
    kv("u32", 4, struct.pack("<I", 70000)), kv("i32", 5, struct.pack("<i", -70000)),
    kv("f32", 6, struct.pack("<f", 1.5)), kv("bool", 7, struct.pack("<B", 1)),
    kv("u64", 10, struct.pack("<Q", 2**63 + 5)), kv("i64", 11, struct.pack("<q", -5)),
    kv("f64", 12, struct.pack("<d", -2.25)),
    kv("arr", 9, struct.pack("<IQ", 8, 2) + gstr("a") + gstr("bc")),
    kv("nested", 9, struct.pack("<IQ", 9, 1) + struct.pack("<IQ", 5, 2) + struct.pack("<ii", 1, 2)),
]
write("gguf", "v3_all_types", gguf(3, meta, [("w8", "q8_0", [64, 2]), ("w4", "q4_0", [32, 3]),
                                             ("k4", "q4_K", [256, 1]), ("k6", "q6_K", [256, 1]),
                                             ("n", "f32", [5]), ("h", "f16", [4, 2]), ("b", "bf16", [3]),
                                             ("i", "i8", [7]), ("j", "i32", [2, 2]), ("d", "f64", [2])]))
write("gguf", "v2_small", gguf(2, meta[:3], [("t", "f32", [4, 4])]))
write("gguf", "aligned_64", gguf(3, [kv("general.alignment", 4, struct.pack("<I", 64))], [("t", "q8_0", [32, 1]),
                                                                                         ("u", "f32", [3])], 64))
write("gguf", "empty", gguf(3, [], []))

# ---- encoded blocks: format byte, rows byte, then whole blocks of random bytes
for i, (fmt, per_block) in enumerate([(0, 34), (1, 18), (2, 144), (3, 210), (4, 2), (5, 2)]):
    for rows in (1, 3):
        blocks = 3 if per_block > 2 else 40
        write("blocks", f"format{fmt}_rows{rows}", [fmt, rows - 1] + [rng.randrange(256) for _ in range(rows * blocks * per_block)])

# ---- partitions: op, rows, cols, order, wrong, then range lengths
for op in range(5):
    for wrong in range(4):
        write("partitions", f"op{op}_wrong{wrong}", [op, 17 + op, 9 + 3 * op, (op + wrong) % 5, wrong] +
              [rng.randrange(256) for _ in range(12)])

# ---- expr: FuzzedDataProvider reads the tree's description from both ends of the input, so
# random bytes of several lengths are random trees (small ones shallow, long ones deep).
for i in range(48):
    write("expr", f"tree{i:02d}", [rng.randrange(256) for _ in range(8 + 5 * i)])
