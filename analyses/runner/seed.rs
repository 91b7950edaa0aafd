//! Seeds in configurations over the whole u64 range. TOML's integers are signed 64-bit, so a
//! seed of 2^63 or more (`--seed 18446744073709551615`) is written as a string of digits
//! (`seed = "18446744073709551615"`) and read back from either form; seeds below 2^63 stay
//! integers, so every existing configuration and manifest keeps its bytes.
//!
//! Use it on a config field as `#[serde(with = "crate::seed")]`.

use serde::{Deserialize, Deserializer, Serializer};

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

/// Reads a seed from an integer in 0..2^64 or a string of its digits.
pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Int(u64),
        Text(String),
    }
    match Either::deserialize(d)? {
        Either::Int(i) => Ok(i),
        Either::Text(t) => t.parse().map_err(|_| {
            serde::de::Error::custom(format!(
                "a seed in 0..=18446744073709551615 (an integer, or its digits in quotes), not {t:?}"
            ))
        }),
    }
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
        assert!(toml::from_str::<C>("seed = -1").is_err());
        assert!(toml::from_str::<C>("seed = \"x\"").is_err());
    }
}
