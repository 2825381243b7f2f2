//! 4-bit rows: the form of a large base's vectors that a search scans first (an eighth of the `f32` rows'
//! bytes). At a million 384-dimension rows the scan reads 192 MB where 8-bit rows made it read 384 MB, and
//! with AVX2 it multiplies 32 bytes of a row (64 components) per step (docs/embeddings.md).
//!
//! A row is its vector divided by one scale (the largest component maps to ±7), rounded, and stored
//! offset by 8 as a nibble in 1..=15: component `2j` in the low nibble of byte `j`, `2j + 1` in the high
//! one, an odd last component paired with 8 (zero). The query is kept as 8-bit integers split into its even
//! and odd components, so a row's dot product is two multiplies of unsigned nibbles by signed bytes, less
//! 8 times the sum of the query's bytes.

/// The largest 4-bit value a component is rounded to (±7; the offset 8 keeps nibbles unsigned).
const LARGEST: f32 = 7.0;
const OFFSET: i32 = 8;

/// The bytes of one row of `dimensions` components.
#[must_use]
pub(super) fn row_bytes(dimensions: usize) -> usize {
    dimensions.div_ceil(2)
}

/// The scale that maps `vector`'s largest component to ±`largest` (1 for a zero vector).
fn scale_to(vector: &[f32], largest: f32) -> f32 {
    // Eight running maxima, not one: one chain of dependent maxima took as long as the rest of a row's
    // quantizing. The largest is the same in any order.
    let mut lanes = [0.0_f32; 8];
    let mut blocks = vector.chunks_exact(8);
    for block in blocks.by_ref() {
        for (lane, x) in lanes.iter_mut().zip(block) {
            *lane = lane.max(x.abs());
        }
    }
    let biggest = blocks.remainder().iter().chain(&lanes).fold(0.0_f32, |m, x| m.max(x.abs()));
    if biggest > 0.0 { biggest / largest } else { 1.0 }
}

/// `x.round()` (halves away from zero) as an integer, for `|x| < 2^22` (and 0 for NaN), in operations the
/// compiler makes vector instructions of: `f32::round` is a call to libm's `roundf` on x86-64, and a float's
/// conversion to an integer (`as`) is one component at a time; they took most of writing a million rows.
fn round_half_away(x: f32) -> i32 {
    // 1.5 × 2^23: the sum's last place is 1, so the addition rounds `x` to a whole number (halves to even),
    // which stands in the sum's low bits.
    const WHOLE: f32 = 12_582_912.0;
    let x = if x.is_nan() { 0.0 } else { x };
    let sum = x + WHOLE;
    let whole = sum.to_bits().cast_signed() - WHOLE.to_bits().cast_signed();
    // The rest is exact; a half rounded to even toward zero goes away from it instead.
    let rest = x - (sum - WHOLE);
    whole + i32::from(rest == 0.5 && x > 0.0) - i32::from(rest == -0.5 && x < 0.0)
}

/// `vector` as a 4-bit row appended to `rows`, and the scale that makes it the vector again.
pub(super) fn quantize(vector: &[f32], rows: &mut Vec<u8>) -> f32 {
    let scale = scale_to(vector, LARGEST);
    let nibble = |&x: &f32| {
        // Clamped first, so that the rounding's whole part fits; `round_half_away` then as `f32::round`.
        let rounded = round_half_away((x / scale).clamp(-LARGEST - 1.0, LARGEST + 1.0));
        (rounded.clamp(-(LARGEST as i32), LARGEST as i32) + OFFSET) as u8
    };
    // Each component's nibble in a byte of its own first, then paired: two loops the compiler makes vector
    // instructions of, where pairing them as they are made ran one component at a time.
    let nibbles: Vec<u8> = vector.iter().map(nibble).collect();
    let mut pairs = nibbles.chunks_exact(2);
    rows.extend(pairs.by_ref().map(|pair| pair[0] | (pair[1] << 4)));
    if let [last] = pairs.remainder() {
        rows.push(last | ((OFFSET as u8) << 4));
    }
    scale
}

/// A query in the form a 4-bit row is multiplied with.
pub(super) struct Query {
    /// The query's 8-bit components `0, 2, 4…` and `1, 3, 5…`, each padded with zeros to a whole number
    /// of 32-byte blocks.
    even: Vec<i8>,
    odd: Vec<i8>,
    /// The sum of its 8-bit components: what the nibbles' offset adds to every dot product.
    sum: i32,
    /// Its 8-bit components times this are the query.
    scale: f32,
    /// The bytes of a row of the query's dimensions.
    row_bytes: usize,
}

impl Query {
    #[must_use]
    pub(super) fn new(query: &[f32]) -> Query {
        let scale = scale_to(query, 127.0);
        let bytes: Vec<i8> = query.iter().map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8).collect();
        let padded = row_bytes(query.len()).next_multiple_of(32);
        let mut even = vec![0_i8; padded];
        let mut odd = vec![0_i8; padded];
        for (at, pair) in bytes.chunks(2).enumerate() {
            even[at] = pair[0];
            odd[at] = pair.get(1).copied().unwrap_or(0);
        }
        let sum = bytes.iter().map(|&b| i32::from(b)).sum();
        Query { even, odd, sum, scale, row_bytes: row_bytes(query.len()) }
    }

    /// About the dot product of the query with the vector whose 4-bit row is `row` and scale `scale`.
    #[must_use]
    #[cfg(test)]
    fn dot(&self, row: &[u8], scale: f32) -> f32 {
        let mut out = Vec::with_capacity(1);
        self.dots(row, &[scale], &mut out);
        out[0]
    }

    /// About the dot products of the query with consecutive 4-bit `rows` of its dimensions, one per scale of
    /// `scales`, appended to `out` in order. With AVX2 (checked once per process) the whole loop is compiled
    /// for it, so a row costs no call.
    pub(super) fn dots(&self, rows: &[u8], scales: &[f32], out: &mut Vec<f32>) {
        assert_eq!(rows.len(), scales.len() * self.row_bytes, "one row of the query's dimensions per scale");
        #[cfg(target_arch = "x86_64")]
        if super::vectors::avx2() {
            // SAFETY: the processor has AVX2, checked above.
            #[allow(unsafe_code)]
            return unsafe { self.dots_avx2(rows, scales, out) };
        }
        self.dots_with(rows, scales, out, unsigned_by_signed_plain);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn dots_avx2(&self, rows: &[u8], scales: &[f32], out: &mut Vec<f32>) {
        // The closure is compiled with this function's AVX2, so it may call the kernel.
        self.dots_with(rows, scales, out, |row, even, odd| unsigned_by_signed_avx2(row, even, odd));
    }

    #[inline(always)]
    fn dots_with(
        &self,
        rows: &[u8],
        scales: &[f32],
        out: &mut Vec<f32>,
        products: impl Fn(&[u8], &[i8], &[i8]) -> i32,
    ) {
        for (row, scale) in rows.chunks_exact(self.row_bytes.max(1)).zip(scales) {
            let products = products(row, &self.even, &self.odd) - OFFSET * self.sum;
            out.push(scale * self.scale * products as f32);
        }
    }
}

/// Σ low(row[j]) × even[j] + high(row[j]) × odd[j]: 32 bytes of the row at a time with AVX2 below, one at a
/// time here.
fn unsigned_by_signed_plain(row: &[u8], even: &[i8], odd: &[i8]) -> i32 {
    row.iter()
        .zip(even.iter().zip(odd))
        .map(|(&byte, (&e, &o))| i32::from(byte & 15) * i32::from(e) + i32::from(byte >> 4) * i32::from(o))
        .sum()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(unsafe_code)]
#[inline]
fn unsigned_by_signed_avx2(row: &[u8], even: &[i8], odd: &[i8]) -> i32 {
    use std::arch::x86_64::{
        __m256i, _mm_add_epi32, _mm_cvtsi128_si32, _mm_shuffle_epi32, _mm256_add_epi16, _mm256_add_epi32,
        _mm256_and_si256, _mm256_castsi256_si128, _mm256_extracti128_si256, _mm256_loadu_si256, _mm256_madd_epi16,
        _mm256_maddubs_epi16, _mm256_set1_epi8, _mm256_set1_epi16, _mm256_setzero_si256, _mm256_srli_epi16,
    };
    assert!(even.len() >= row.len() && odd.len() >= row.len());
    let blocks = row.len() / 32;
    let low = _mm256_set1_epi8(15);
    let ones = _mm256_set1_epi16(1);
    let mut sums = _mm256_setzero_si256();
    for block in 0..blocks {
        let at = block * 32;
        // SAFETY: `at + 32 <= row.len() <= even.len(), odd.len()`: each load reads inside its slice.
        let (bytes, e, o) = unsafe {
            (
                _mm256_loadu_si256(row.as_ptr().add(at).cast::<__m256i>()),
                _mm256_loadu_si256(even.as_ptr().add(at).cast::<__m256i>()),
                _mm256_loadu_si256(odd.as_ptr().add(at).cast::<__m256i>()),
            )
        };
        let lows = _mm256_and_si256(bytes, low);
        let highs = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low);
        // Each 16-bit sum of two products is at most 2 × 15 × 127, and two of them fit: no saturation.
        let pairs = _mm256_add_epi16(_mm256_maddubs_epi16(lows, e), _mm256_maddubs_epi16(highs, o));
        sums = _mm256_add_epi32(sums, _mm256_madd_epi16(pairs, ones));
    }
    let half = _mm_add_epi32(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
    let quarter = _mm_add_epi32(half, _mm_shuffle_epi32(half, 0b01_00_11_10));
    let total = _mm_add_epi32(quarter, _mm_shuffle_epi32(quarter, 0b10_11_00_01));
    let tail = blocks * 32;
    _mm_cvtsi128_si32(total) + unsigned_by_signed_plain(&row[tail..], &even[tail..], &odd[tail..])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rounding is `f32::round`'s: halves away from zero, every representable value between two
    /// integers near 0 and near the clamp, their neighbours, and NaN.
    #[test]
    fn rounding_half_away_is_f32_rounds() {
        let mut values = vec![f32::NAN, 0.0, -0.0, 8.0, -8.0, 7.5, -7.5, 0.5, -0.5, 2.5, -2.5];
        for start in [-8.0_f32, -0.5, 0.49, 7.4] {
            let mut x = start;
            for _ in 0..200_000 {
                values.push(x);
                x = f32::from_bits(if x >= 0.0 { x.to_bits() + 1 } else { x.to_bits() - 1 });
            }
        }
        for x in values {
            let expected = if x.is_nan() { 0 } else { x.round() as i32 };
            assert_eq!(super::round_half_away(x), expected, "{x:e}");
        }
    }

    /// Each nibble is its component over the scale rounded as `f32::round` rounds it, clamped to ±7 and
    /// offset by 8, with an odd last component paired with 8: vectors of odd and even lengths, components
    /// at exact halves of the scale, and NaN.
    #[test]
    fn a_row_is_its_components_rounded_and_paired() {
        let mut state = 0x5eed_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        for dimensions in [1, 2, 7, 64, 385] {
            for _ in 0..200 {
                let mut vector: Vec<f32> = (0..dimensions).map(|_| next()).collect();
                vector[0] = 1.0;
                if dimensions > 4 {
                    // Halves of the scale (1 / 7): 0.5, 1.5 and -2.5 sevenths.
                    (vector[1], vector[2], vector[3]) = (0.5 / 7.0, 1.5 / 7.0, -2.5 / 7.0);
                    vector[4] = f32::NAN;
                }
                let mut row = Vec::new();
                let scale = super::quantize(&vector, &mut row);
                let nibble = |x: Option<&f32>| x.map_or(8, |x| ((x / scale).round().clamp(-7.0, 7.0) as i32 + 8) as u8);
                let expected: Vec<u8> =
                    vector.chunks(2).map(|pair| nibble(pair.first()) | (nibble(pair.get(1)) << 4)).collect();
                assert_eq!(row, expected, "{dimensions}");
            }
        }
    }

    #[test]
    fn a_row_multiplies_as_its_rounded_components_do() {
        // 389 components: an odd last one, and a tail past the 32-byte blocks.
        for dimensions in [1, 2, 63, 64, 389] {
            let vector: Vec<f32> = (0..dimensions).map(|i| ((i * 37) % 29) as f32 / 14.0 - 1.0).collect();
            let query: Vec<f32> = (0..dimensions).map(|i| ((i * 91) % 31) as f32 / 15.0 - 1.0).collect();
            let mut row = Vec::new();
            let scale = quantize(&vector, &mut row);
            assert_eq!(row.len(), row_bytes(dimensions));
            let form = Query::new(&query);
            let components: Vec<i32> =
                row.iter().flat_map(|b| [i32::from(b & 15) - 8, i32::from(b >> 4) - 8]).take(dimensions).collect();
            assert!(components.iter().all(|c| c.abs() <= 7));
            let plain: i32 = components
                .iter()
                .zip(form.even.iter().zip(&form.odd).flat_map(|(e, o)| [e, o]))
                .map(|(c, q)| c * i32::from(*q))
                .sum();
            let expected = scale * form.scale * plain as f32;
            assert_eq!(form.dot(&row, scale), expected, "{dimensions} dimensions");
            // The kernel this processor runs (AVX2 where it has it) and the plain loop agree.
            let mut plain_loop = Vec::new();
            form.dots_with(&row, &[scale], &mut plain_loop, unsigned_by_signed_plain);
            assert_eq!(form.dot(&row, scale), plain_loop[0], "{dimensions} dimensions");
            // The 4-bit product is near the exact one (each component within half a step).
            let exact: f32 = vector.iter().zip(&query).map(|(a, b)| a * b).sum();
            let step_error = 0.5 * scale * query.iter().map(|q| q.abs()).sum::<f32>() + 0.01 * dimensions as f32;
            assert!((form.dot(&row, scale) - exact).abs() <= step_error, "{dimensions}: {exact}");
        }
    }
}
