//! The claims ledger's shared parts: the named thresholds of its rules ([`rules`]) and the
//! claims judged as several sub-claims ([`claim6`]). The ledger analysis, which reads every
//! other analysis's tables and gives each claim its verdict, is [`crate::claims`], above the
//! analyses.

pub mod claim6;
pub mod rules;
