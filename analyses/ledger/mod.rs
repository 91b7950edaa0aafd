//! The claims ledger's shared parts: the named thresholds of its rules ([`rules`]). The
//! ledger analysis, which reads every other analysis's tables and gives each claim its
//! verdict, is [`crate::claims`], above the analyses; claims judged as several sub-claims live
//! beside it ([`crate::claims::claim6`]).

pub mod rules;
