//! A fast hasher for the back ends' internal maps (vertex grid cells, weld keys, strip edges, distinct
//! bone positions): small fixed-size integer keys, looked up millions of times per model.
//!
//! std's SipHash costs about 5% of a GoldSrc compile; this one is a multiply-rotate over 64-bit
//! words (the FxHash scheme) with a final avalanche, so that both the low bits (bucket) and the
//! high bits (hashbrown's control byte) vary. The maps are only looked up, never iterated into
//! the output, so the hasher cannot change a written byte (with std's random seeds any
//! iteration order was already possible).

use std::hash::{BuildHasherDefault, Hasher};

/// The state: one 64-bit word.
#[derive(Clone, Copy, Debug, Default)]
pub struct FastHasher(u64);

const K: u64 = 0xf135_7aea_2e62_a9c5;

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(26) ^ word).wrapping_mul(K);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            if let Some(dst) = w.get_mut(..rest.len()) {
                dst.copy_from_slice(rest);
            }
            self.add(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 59));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn write_i32(&mut self, i: i32) {
        self.add(u64::from(i as u32));
    }
    #[inline]
    fn finish(&self) -> u64 {
        // murmur3's fmix64: every input bit reaches the top and the bottom bits.
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

/// `BuildHasher` for [`FastHasher`].
pub type FastBuild = BuildHasherDefault<FastHasher>;
/// A `HashMap` with [`FastHasher`].
pub type FastMap<K, V> = std::collections::HashMap<K, V, FastBuild>;
/// A `HashSet` with [`FastHasher`].
pub type FastSet<K> = std::collections::HashSet<K, FastBuild>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_works_and_spreads() {
        let mut m: FastMap<(u32, usize, [i32; 3]), usize> = FastMap::default();
        for i in 0..1000i32 {
            m.insert((1, 2, [i, -i, i / 3]), i as usize);
        }
        for i in 0..1000i32 {
            assert_eq!(m.get(&(1, 2, [i, -i, i / 3])), Some(&(i as usize)));
        }
        let mut top = std::collections::HashSet::new();
        for i in 0..256u32 {
            let mut h = FastHasher::default();
            h.write_u32(i);
            top.insert(h.finish() >> 57);
        }
        assert!(top.len() > 64);
    }
}
