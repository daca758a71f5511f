//! What `mdlc build` tells build systems and keeps for the next run: the up-to-date records
//! ([`record`]), the `--report` JSON and the `--depfile` rules ([`report`]).
//! docs/build-systems.md describes both files and how Ninja, Make and Bazel use them.

pub mod record;
pub mod report;

/// The content hash of the records: XXH3-128 as 32 hex digits.
pub fn content_hash(bytes: &[u8]) -> String {
    format!("{:032x}", xxhash_rust::xxh3::xxh3_128(bytes))
}

/// The SHA-256 of `bytes` as 64 hex digits (the report's `sha256`).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in digest {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_abc_is_the_fips_180_2_example() {
        // FIPS 180-2, appendix B.1
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn content_hashes_differ_for_one_changed_byte() {
        assert_ne!(content_hash(b"time 0\n"), content_hash(b"time 1\n"));
        assert_eq!(content_hash(b"x").len(), 32);
    }
}
