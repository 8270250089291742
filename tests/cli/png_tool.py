#!/usr/bin/python3
"""png_tool.py - PNG files for tests/cli/test_vision.sh, written and read here with zlib alone
(independent of libpng):
  png_tool.py write OUT W H TYPE VALUE [X0 Y0 X1 Y1]  an image of colour TYPE (0 grey, 2 RGB), 8 bits,
                                                  all 0 but VALUE inside the rectangle (if given)
  png_tool.py mnist IMAGES.gz INDEX OUT           image INDEX of an IDX file as a grey PNG
  png_tool.py size FILE                           prints "W H TYPE DEPTH"
  png_tool.py pixels FILE                         prints the grey pixels, one row a line
"""
import gzip
import struct
import sys
import zlib


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def write(path, w, h, ctype, rows):
    raw = b"".join(b"\0" + bytes(r) for r in rows)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, ctype, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    open(path, "wb").write(png)


def read(path):
    data = open(path, "rb").read()
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype = hdr[0], hdr[1], hdr[2], hdr[3]
    raw, rows, prev = zlib.decompress(idat), [], [0] * w
    for y in range(h):  # 8-bit grey: one byte a pixel; PNG's five filters undone
        f, line = raw[y * (w + 1)], list(raw[y * (w + 1) + 1:(y + 1) * (w + 1)])
        for x in range(w):
            a, b, c = (line[x - 1] if x else 0), prev[x], (prev[x - 1] if x else 0)
            if f == 1: line[x] = (line[x] + a) & 255
            elif f == 2: line[x] = (line[x] + b) & 255
            elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pr = a if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c) else (b if abs(p - b) <= abs(p - c) else c)
                line[x] = (line[x] + pr) & 255
        rows.append(line)
        prev = line
    return w, h, ctype, depth, rows


def main():
    cmd = sys.argv[1]
    if cmd == "write":
        out, w, h, ctype, value = sys.argv[2], *map(int, sys.argv[3:7])
        box = list(map(int, sys.argv[7:11])) or [0, 0, 0, 0]
        ch = 3 if ctype == 2 else 1
        rows = [[value if box[0] <= x < box[2] and box[1] <= y < box[3] else 0
                 for x in range(w) for _ in range(ch)] for y in range(h)]
        write(out, w, h, ctype, rows)
    elif cmd == "mnist":
        data = gzip.open(sys.argv[2]).read()
        i = int(sys.argv[3])
        px = data[16 + i * 784:16 + (i + 1) * 784]
        write(sys.argv[4], 28, 28, 0, [px[y * 28:(y + 1) * 28] for y in range(28)])
    elif cmd == "size":
        data = open(sys.argv[2], "rb").read()
        w, h, depth, ctype = struct.unpack(">IIBB", data[16:26])
        print(w, h, ctype, depth)
    elif cmd == "pixels":
        for row in read(sys.argv[2])[4]:
            print(" ".join(map(str, row)))


if __name__ == "__main__":
    main()
