// Sums in double over many coordinates kept in 8 lanes: lane l adds the coordinates
// j ≡ l (mod 8) in order, and the lanes are added pairwise at the end. One running sum is
// a serial chain of additions (about 4 cycles per coordinate); 8 lanes are one vector
// register the compiler adds to in one instruction. The order depends only on the
// coordinates, so a sum taken a block at a time (blocks starting at multiples of 8) is the
// same whatever the block size. GCC/Clang vector extensions: any x86-64 level compiles them.
#pragma once

#include <cstddef>

// Below AVX-512, GCC notes (-Wpsabi) that functions taking or returning these vectors by
// value would pass them differently than an AVX-512 build. The project's vector helpers
// are internal to their files and never cross a library boundary, so the note does not
// apply; it is silenced for the files that include this header.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace compatbench {

using V8d = double __attribute__((vector_size(64)));
using V8f = float __attribute__((vector_size(32)));
using V8l = long long __attribute__((vector_size(64)));  // a V8d comparison's lanes: 0 or -1

// 8 float32 lanes in double, each exactly.
inline V8d widen(const V8f& v) { return __builtin_convertvector(v, V8d); }

struct Lanes {
    V8d v = {};
    double total() const {
        return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
    }
};

}  // namespace compatbench
