// The ascending ranks of a fibre's magnitudes, for DELLA's keep probabilities
// (draws.cpp): a stable LSD radix sort over only the bits that differ among the values'
// patterns. Internal to merging/.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "common/constant.h"

namespace compatbench::merging::ranks {

// Sorts `items` stably by digits 0, 1, …, digits − 1 (the least significant first) of
// `width` bits each, digit(item, d) giving one; `next` is scratch. All digits' counts are
// taken in one loop. Digits > 0: the digit count, a constant (its loops unrolled).
template <int Digits, class T, class Digit>
void radix_in(std::vector<T>& items, std::vector<T>& next, int digits, int width, Digit&& digit) {
    const int nd = Digits > 0 ? Digits : digits;
    thread_local std::vector<std::uint32_t> count;
    const std::size_t buckets = std::size_t{1} << width;
    count.assign(static_cast<std::size_t>(nd) * buckets, 0);
    next.resize(items.size());
    for (const T& e : items)
        for (int d = 0; d < nd; ++d) ++count[static_cast<std::size_t>(d) * buckets + digit(e, d)];
    for (int d = 0; d < nd; ++d) {
        std::uint32_t* at = &count[static_cast<std::size_t>(d) * buckets];
        std::uint32_t start = 0;
        for (std::size_t b = 0; b < buckets; ++b) start += std::exchange(at[b], start);
        for (const T& e : items) next[at[digit(e, d)]++] = e;
        items.swap(next);
    }
}

// radix_in, with the digit count a constant up to 8 (a double's 64 bits in digits of 8, a
// fibre of 2,048 values or more); more digits (a fibre of 128 or fewer, digits of 4 bits,
// a wide span) count at run time.
template <class T, class Digit>
void radix(std::vector<T>& items, std::vector<T>& next, int digits, int width, Digit&& digit) {
    if (!with_constant<8>(static_cast<std::size_t>(digits),
                          [&](auto D) { radix_in<D()>(items, next, D(), width, digit); }))
        radix_in<0>(items, next, digits, width, digit);
}

// The bits that differ among a fibre's patterns, [low, low + span), and the radix digits
// that cover them: as few as can, each of at most max_width bits (a digit's counts are
// cleared and summed per fibre, so they should stay well below the fibre's length).
struct Span {
    int low = 0, span = 0, digits = 0, width = 0;
    Span(std::uint64_t varying, int max_width) {
        if (varying == 0) return;
        low = std::countr_zero(varying);
        span = static_cast<int>(std::bit_width(varying)) - low;
        digits = (span + max_width - 1) / max_width;
        width = (span + digits - 1) / digits;
    }
    std::uint64_t digit_mask() const { return (std::uint64_t{1} << width) - 1; }
};

// ranks_of where a pattern's span and the index fit in one word W: each value the word
// (its span's bits above the index), sorted by the span's digits, the index then read back.
template <class W, class Pattern>
void ranks_in_words(std::size_t cols, Pattern&& pattern, const Span& s, int index_bits,
                    std::vector<std::uint32_t>& rank) {
    thread_local std::vector<W> word, next;
    word.resize(cols);
    const std::uint64_t span_mask = s.span == 0 ? 0 : ~std::uint64_t{0} >> (64 - s.span);
    for (std::size_t c = 0; c < cols; ++c)
        word[c] = static_cast<W>((((pattern(c) >> s.low) & span_mask) << index_bits) | c);
    const int width = s.width;
    const auto mask = static_cast<W>(s.digit_mask());
    radix(word, next, s.digits, width, [=](W w, int d) {
        return static_cast<std::size_t>((w >> (index_bits + d * width)) & mask);
    });
    const auto index_mask = static_cast<W>((std::uint64_t{1} << index_bits) - 1);
    for (std::size_t r = 0; r < cols; ++r)
        rank[word[r] & index_mask] = static_cast<std::uint32_t>(r);
}

// A pattern too wide to share a word with its index.
struct Keyed {
    std::uint64_t key;
    std::uint32_t col;
};

// rank[c]: the 0-based ascending rank of mag(c) = mag[c · stride] among the `cols` values of
// one fibre, ties to the lower index (a stable sort's). No value is negative, so their bit
// patterns order as they do, and only the bits that differ among them order them (a
// bfloat16 value's 15, 17 with a zero among them): where those and the index fit in 32 or 64 bits,
// each value is one word of that size (a few KB to sort, in the L1 cache), else a pattern and index
// pair. With a NaN among them, a stable sort by comparisons.
inline void ranks_of(std::size_t cols, const double* mag, std::size_t stride,
                     std::vector<std::uint32_t>& rank) {
    const auto pattern = [&](std::size_t c) {
        std::uint64_t u;
        std::memcpy(&u, mag + c * stride, sizeof u);
        return u;
    };
    std::uint64_t any = 0, all = ~std::uint64_t{0}, nan = 0;
    const auto scan = [&](auto step) {  // step: the stride, a constant where it is 1
        for (std::size_t c = 0; c < cols; ++c) {
            std::uint64_t u;
            std::memcpy(&u, mag + c * step, sizeof u);
            any |= u;
            all &= u;
            nan |= static_cast<std::uint64_t>((u << 1) > (std::uint64_t{0x7ff} << 53));
        }
    };
    if (stride == 1)
        scan(std::integral_constant<std::size_t, 1>{});
    else
        scan(stride);
    if (nan) {
        thread_local std::vector<std::uint32_t> col;
        col.resize(cols);
        for (std::size_t c = 0; c < cols; ++c) col[c] = static_cast<std::uint32_t>(c);
        std::stable_sort(col.begin(), col.end(), [&](std::uint32_t a, std::uint32_t b) {
            return mag[a * stride] < mag[b * stride];
        });
        for (std::size_t r = 0; r < cols; ++r) rank[col[r]] = static_cast<std::uint32_t>(r);
        return;
    }
    const auto index_bits = static_cast<int>(std::bit_width(cols - 1));
    const Span s(any ^ all, std::clamp(index_bits - 3, 4, 11));  // 2,048 values: 8 bits
    if (s.span + index_bits <= 32)
        return ranks_in_words<std::uint32_t>(cols, pattern, s, index_bits, rank);
    if (s.span + index_bits <= 64)
        return ranks_in_words<std::uint64_t>(cols, pattern, s, index_bits, rank);
    thread_local std::vector<Keyed> item, next;
    item.resize(cols);
    for (std::size_t c = 0; c < cols; ++c) item[c] = {pattern(c), static_cast<std::uint32_t>(c)};
    const int low = s.low, width = s.width;
    const std::uint64_t mask = s.digit_mask();
    radix(item, next, s.digits, width, [=](const Keyed& e, int d) {
        return static_cast<std::size_t>((e.key >> (low + d * width)) & mask);
    });
    for (std::size_t r = 0; r < cols; ++r) rank[item[r].col] = static_cast<std::uint32_t>(r);
}

}  // namespace compatbench::merging::ranks
