//! Seeds in configurations over the whole u64 range. TOML's integers are signed 64-bit, so a
//! seed of 2^63 or more (`--seed 18446744073709551615`) is written as a string of digits
//! (`seed = "18446744073709551615"`) and read back from either form; seeds below 2^63 stay
//! integers, so every existing configuration and manifest keeps its bytes.
//!
//! Use it on a config field as `#[serde(with = "crate::seed")]`.

use serde::{Deserializer, Serializer};

/// The TOML value of `seed`: an integer below 2^63, else its digits as a string.
pub(crate) fn to_toml(seed: u64) -> toml::Value {
    match i64::try_from(seed) {
        Ok(i) => toml::Value::Integer(i),
        Err(_) => toml::Value::String(seed.to_string()),
    }
}

/// Writes `seed` as an integer below 2^63, else as its digits.
pub fn serialize<S: Serializer>(seed: &u64, s: S) -> Result<S::Ok, S::Error> {
    if i64::try_from(*seed).is_ok() {
        s.serialize_u64(*seed)
    } else {
        s.serialize_str(&seed.to_string())
    }
}

/// What a seed may be, for error messages (after the key's name: `[mc-grid] seed: expected
/// ..., got -1`).
pub(crate) const EXPECTED: &str =
    "a non-negative integer < 2^64 (0..=18446744073709551615), or its digits in quotes";

/// The error for a value that is not a seed: what is accepted, and the value as given
/// (shortened like every echoed value, [`normscope_core::error::shown`]).
fn not_a_seed<E: serde::de::Error>(got: impl std::fmt::Display) -> E {
    E::custom(format!(
        "expected {EXPECTED}, got {}",
        normscope_core::error::shown(&got.to_string())
    ))
}

/// Accepts a seed from any integer in 0..2^64 or a string of its digits, and names the value
/// otherwise (an untagged enum would say only "did not match any variant").
struct SeedVisitor;

impl serde::de::Visitor<'_> for SeedVisitor {
    type Value = u64;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(EXPECTED)
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| not_a_seed(v))
    }

    fn visit_u128<E: serde::de::Error>(self, v: u128) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| not_a_seed(v))
    }

    fn visit_i128<E: serde::de::Error>(self, v: i128) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| not_a_seed(v))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<u64, E> {
        Err(not_a_seed(v))
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<u64, E> {
        Err(not_a_seed(v))
    }

    fn visit_str<E: serde::de::Error>(self, t: &str) -> Result<u64, E> {
        t.parse().map_err(|_| not_a_seed(format!("{t:?}")))
    }
}

/// Reads a seed from an integer in 0..2^64 or a string of its digits; anything else is refused
/// with [`EXPECTED`] and the value given.
pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    d.deserialize_any(SeedVisitor)
}

#[cfg(test)]
mod tests {
    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct C {
        #[serde(with = "super")]
        seed: u64,
    }

    #[test]
    fn every_u64_round_trips_through_toml_and_json() {
        for seed in [0, 1, i64::MAX as u64, i64::MAX as u64 + 1, u64::MAX] {
            let c = C { seed };
            let t = toml::to_string(&c).unwrap();
            assert_eq!(toml::from_str::<C>(&t).unwrap(), c, "{t}");
            let j = serde_json::to_string(&c).unwrap();
            assert_eq!(serde_json::from_str::<C>(&j).unwrap(), c, "{j}");
        }
        // Small seeds keep the integer form existing files have.
        assert_eq!(toml::to_string(&C { seed: 7 }).unwrap(), "seed = 7\n");
    }

    #[test]
    fn a_value_that_is_not_a_seed_is_named_with_what_is_accepted() {
        for (text, got) in [
            ("seed = -1", "got -1"),
            ("seed = 1.5", "got 1.5"),
            ("seed = true", "got true"),
            ("seed = \"x\"", "got \"x\""),
            (
                "seed = \"18446744073709551616\"",
                "got \"18446744073709551616\"",
            ),
        ] {
            let e = toml::from_str::<C>(text).unwrap_err().message().to_string();
            assert!(
                e.starts_with("expected a non-negative integer < 2^64"),
                "{text}: {e}"
            );
            assert!(e.ends_with(got), "{text}: {e}");
            assert!(!e.contains("untagged"), "{text}: {e}");
        }
        let e = serde_json::from_str::<C>("{\"seed\": -3}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("got -3"), "{e}");
        // An array is not a seed either; serde names what it got and what is accepted.
        let e = toml::from_str::<C>("seed = [1]")
            .unwrap_err()
            .message()
            .to_string();
        assert!(e.contains(super::EXPECTED), "{e}");
        // A long string is shortened, not echoed whole.
        let long = format!("seed = \"{}\"", "9x".repeat(5000));
        let e = toml::from_str::<C>(&long)
            .unwrap_err()
            .message()
            .to_string();
        assert!(e.len() < 400 && e.contains("bytes)"), "{e}");
    }
}
