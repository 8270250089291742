#!/usr/bin/env python3
"""Writes the bad-GGUF corpus in this directory: small files that each break one rule of the
GGUF format. Every file must be refused cleanly (EL_ERR_FORMAT or EL_ERR_UNSUPPORTED) by the
reader; tests/test_gguf.c checks that, and `make fuzz` seeds the fuzzer with them.

The bytes are assembled here from the GGUF spec, independently of our C writer.
Run from anywhere: python3 tests/data/bad/gen_bad.py"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)


def s(text):
    b = text.encode() if isinstance(text, str) else text
    return struct.pack('<Q', len(b)) + b


def kv(key, vtype, payload):
    return s(key) + struct.pack('<I', vtype) + payload


def tinfo(name, ne, ttype, offset):
    return s(name) + struct.pack('<I', len(ne)) + b''.join(struct.pack('<q', n) for n in ne) + \
        struct.pack('<IQ', ttype, offset)


def gguf(kvs, tinfos, data=b'', version=3, align=32, magic=b'GGUF', n_kv=None, n_t=None):
    head = magic + struct.pack('<IQQ', version, len(tinfos) if n_t is None else n_t,
                               len(kvs) if n_kv is None else n_kv)
    body = head + b''.join(kvs) + b''.join(tinfos)
    body += b'\0' * (-len(body) % align)
    return body + data


ARCH = kv('general.architecture', STR, s('llama'))
T_F32 = tinfo('a', [4, 2], 0, 0)           # 32 bytes at 0
T_Q80 = tinfo('b', [32], 8, 32)            # 34 bytes at 32
DATA = bytes(range(32)) + b'\x22' * 34


def valid():
    return gguf([ARCH, kv('n', U32, struct.pack('<I', 7))], [T_F32, T_Q80], DATA)


def files():
    v = valid()
    yield 'empty', b''
    yield 'magic_wrong', b'GGUX' + v[4:]
    yield 'magic_only', b'GGUF'
    yield 'version1', gguf([ARCH], [], version=1)
    yield 'version99', gguf([ARCH], [], version=99)
    yield 'version_big_endian', b'GGUF' + struct.pack('>I', 3) + v[8:]
    yield 'n_kv_2p40', gguf([ARCH], [], n_kv=1 << 40)
    yield 'n_kv_2p62', gguf([ARCH], [], n_kv=1 << 62)
    yield 'n_kv_max', gguf([ARCH], [], n_kv=(1 << 64) - 1)
    yield 'n_kv_one_too_many', gguf([ARCH], [], n_kv=2)
    yield 'n_tensors_2p62', gguf([ARCH], [], n_t=1 << 62)
    yield 'n_tensors_one_too_many', gguf([ARCH], [T_F32], DATA, n_t=2)
    yield 'key_len_huge', gguf([struct.pack('<Q', 1 << 63) + b'abc' + struct.pack('<I', 4)], [])
    yield 'key_empty', gguf([kv('', U32, struct.pack('<I', 1))], [])
    yield 'key_nul', gguf([kv('a\0b', U32, struct.pack('<I', 1))], [])
    yield 'key_duplicate', gguf([ARCH, kv('n', U32, b'\1\0\0\0'), ARCH], [])
    yield 'string_len_huge', gguf([kv('x', STR, struct.pack('<Q', 1 << 62) + b'abc')], [])
    yield 'string_len_past_end', gguf([kv('x', STR, struct.pack('<Q', 40) + b'abc')], [], align=1)
    yield 'value_type_unknown', gguf([kv('x', 13, b'\0' * 8)], [])
    yield 'value_type_huge', gguf([kv('x', 0xFFFFFFFF, b'\0' * 8)], [])
    yield 'bool_value_2', gguf([kv('x', BOOL, b'\x02')], [])
    yield 'array_len_overflow', gguf([kv('x', ARR, struct.pack('<IQ', U32, 1 << 62) + b'\0' * 8)], [])
    yield 'array_len_past_end', gguf([kv('x', ARR, struct.pack('<IQ', U64, 100) + b'\0' * 8)], [],
                                     align=1)
    yield 'array_of_strings_huge', gguf([kv('x', ARR, struct.pack('<IQ', STR, 1 << 62) + s('a'))], [])
    yield 'array_string_len_huge', gguf([kv('x', ARR, struct.pack('<IQ', STR, 2) + s('a') +
                                            struct.pack('<Q', 1 << 63))], [])
    yield 'array_nested', gguf([kv('x', ARR, struct.pack('<IQ', ARR, 1) +
                                   struct.pack('<IQ', U8, 1) + b'\0')], [])
    yield 'array_type_unknown', gguf([kv('x', ARR, struct.pack('<IQ', 77, 1) + b'\0' * 8)], [])
    yield 'array_bool_value_2', gguf([kv('x', ARR, struct.pack('<IQ', BOOL, 3) + b'\0\1\2')], [])
    yield 'alignment_zero', gguf([kv('general.alignment', U32, struct.pack('<I', 0))], [])
    yield 'alignment_three', gguf([kv('general.alignment', U32, struct.pack('<I', 3))], [], align=3)
    yield 'alignment_string', gguf([kv('general.alignment', STR, s('32'))], [])
    yield 'alignment_negative', gguf([kv('general.alignment', I32, struct.pack('<i', -32))], [])
    yield 'tensor_dims_0', gguf([ARCH], [s('a') + struct.pack('<IIQ', 0, 0, 0)], DATA)
    yield 'tensor_dims_5', gguf([ARCH], [tinfo('a', [1, 1, 1, 1, 1], 0, 0)], DATA)
    yield 'tensor_dims_huge', gguf([ARCH], [s('a') + struct.pack('<I', 1 << 31) + b'\0' * 40], DATA)
    yield 'tensor_ne_negative', gguf([ARCH], [tinfo('a', [4, -2], 0, 0)], DATA)
    yield 'tensor_ne_overflow', gguf([ARCH], [tinfo('a', [1 << 40, 1 << 40], 0, 0)], DATA)
    yield 'tensor_ne_overflow_bytes', gguf([ARCH], [tinfo('a', [1 << 62, 1], 0, 0)], DATA)
    yield 'tensor_ne_overflow_4d', gguf([ARCH], [tinfo('a', [1 << 20] * 4, 0, 0)], DATA)
    yield 'tensor_ne_overflow_with_zero', gguf([ARCH], [tinfo('a', [0, 1 << 62, 1 << 62], 0, 0)], DATA)
    yield 'tensor_type_unknown', gguf([ARCH], [tinfo('a', [4], 99, 0)], DATA)
    yield 'tensor_type_removed_q4_2', gguf([ARCH], [tinfo('a', [32], 4, 0)], DATA)
    yield 'tensor_row_not_block_multiple', gguf([ARCH], [tinfo('a', [16], 2, 0)], DATA)
    yield 'tensor_offset_past_end', gguf([ARCH], [tinfo('a', [4], 0, 1 << 20)], DATA)
    yield 'tensor_offset_huge', gguf([ARCH], [tinfo('a', [4], 0, (1 << 64) - 32)], DATA)
    yield 'tensor_offset_unaligned', gguf([ARCH], [tinfo('a', [4], 0, 4)], DATA)
    yield 'tensor_data_one_byte_short', gguf([ARCH], [T_F32, T_Q80], DATA[:-1])
    yield 'tensor_name_empty', gguf([ARCH], [tinfo('', [4], 0, 0)], DATA)
    yield 'tensor_name_duplicate', gguf([ARCH], [T_F32, tinfo('a', [4], 0, 32)], DATA)
    yield 'tensor_overlap', gguf([ARCH], [T_F32, tinfo('c', [4], 0, 0)], DATA)
    yield 'tensor_name_len_huge', gguf([ARCH], [struct.pack('<Q', 1 << 62) + b'a' * 40], DATA)
    yield 'tensors_no_data_section', gguf([ARCH], [T_F32], b'', align=1)
    # cuts at the main boundaries of a valid file (every length is tested in test_gguf.c)
    head = 24
    kv_end = len(gguf([ARCH, kv('n', U32, struct.pack('<I', 7))], [], align=1))
    for name, n in [('trunc_header', 10), ('trunc_counts', 20), ('trunc_first_key', head + 5),
                    ('trunc_key_value', head + 28), ('trunc_tensor_info', kv_end + 10),
                    ('trunc_padding', kv_end + len(T_F32) + len(T_Q80) + 1),
                    ('trunc_data', len(v) - 20), ('trunc_last_byte', len(v) - 1)]:
        yield name, v[:n]


def main():
    for old in os.listdir(HERE):
        if old.endswith('.gguf'):
            os.remove(os.path.join(HERE, old))
    n = 0
    for name, data in files():
        with open(os.path.join(HERE, name + '.gguf'), 'wb') as f:
            f.write(data)
        n += 1
    print(f'wrote {n} bad files to {HERE}')


if __name__ == '__main__':
    main()
