//! Copy, reverse and sort (docs/training.md, "Designs that fit a small machine", tier 1; lengths 8-16). Content
//! symbols are `0..vocab-1`, the separator is `SEP = vocab - 1`, and with `k = seq / 2` a
//! sequence is
//!
//! ```text
//! s = [a_1 .. a_k, SEP, out_1 .. out_k]     (2k + 1 tokens, a_i iid uniform over the content)
//! out = a (copy), (a_k .. a_1) (reverse), a sorted ascending (sort)
//! ```
//!
//! The model sees inputs `s_0 .. s_{2k-1}` and predicts targets `s_1 .. s_{2k}`; the loss
//! counts (weight 1) exactly the k positions `t = k .. 2k-1`, whose targets are
//! `out_1 .. out_k`; the prompt's targets (unpredictable content, and the separator) weigh 0.
//!
//! Floor: 0, since the outputs are a function of the prompt. Context-free loss: `ln(vocab - 1)`,
//! the loss of the best predictor that sees neither the content nor the position: every output
//! token is marginally uniform over the `vocab - 1` content symbols (for sort, the multiset of
//! sorted outputs is the multiset of the a_i, so the mixture over the k positions is the a_i's
//! uniform law). For copy and reverse a predictor that knows only the position does no better;
//! for sort it does (the first output is the minimum of k draws), so there `ln(vocab - 1)` is
//! an upper bound on the plateau of a model that ignores the content.

use super::{Batch, Io, Task, TaskConfig, TaskKind, TokenBatch};
use crate::{Error, Result};
use normscope_numeric::rng::Rng;
use rand::RngExt;

/// One of copy, reverse, sort.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Algorithmic {
    /// Which task (copy, reverse or sort).
    kind: TaskKind,
    /// Vocabulary size, separator included.
    vocab: usize,
    /// Tokens per sequence the model sees, `2k`.
    seq: usize,
}

impl Algorithmic {
    /// Checks `cfg` ([`TaskConfig::check_as`] its kind) and builds the task `cfg.kind`, which
    /// must be copy, reverse or sort.
    pub fn new(cfg: &TaskConfig) -> Result<Self> {
        if !cfg.kind.is_algorithmic() {
            return Err(Error::Unknown {
                kind: "algorithmic task",
                name: cfg.kind.name().to_string(),
                valid: "copy, reverse, sort".to_string(),
            });
        }
        cfg.check_as(cfg.kind)?;
        Ok(Algorithmic {
            kind: cfg.kind,
            vocab: cfg.vocab,
            seq: cfg.seq,
        })
    }

    /// The separator's id, `vocab - 1`.
    pub fn separator(&self) -> u32 {
        (self.vocab - 1) as u32
    }

    /// The full sequence `[a, SEP, out]` for a prompt a.
    pub fn sequence(&self, a: &[u32]) -> Vec<u32> {
        let mut out = a.to_vec();
        match self.kind {
            TaskKind::Reverse => out.reverse(),
            TaskKind::Sort => out.sort_unstable(),
            _ => {}
        }
        let mut s = a.to_vec();
        s.push(self.separator());
        s.extend(out);
        s
    }
}

impl Task for Algorithmic {
    fn kind(&self) -> TaskKind {
        self.kind
    }

    fn io(&self) -> Io {
        Io::Tokens {
            vocab: self.vocab,
            seq: self.seq,
        }
    }

    /// Per sequence, k content tokens drawn uniformly from `rng` in order.
    fn batch(&self, rng: &mut Rng, size: usize) -> Batch {
        let k = self.seq / 2;
        let sep = self.separator();
        let n = size * self.seq;
        let (mut inputs, mut targets) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let mut weights = Vec::with_capacity(n);
        for _ in 0..size {
            let a: Vec<u32> = (0..k).map(|_| rng.random_range(0..sep)).collect();
            let s = self.sequence(&a);
            inputs.extend_from_slice(&s[..2 * k]);
            targets.extend_from_slice(&s[1..]);
            weights.extend((0..2 * k).map(|t| if t >= k { 1.0 } else { 0.0 }));
        }
        Batch::Tokens(TokenBatch {
            seq: self.seq,
            size,
            inputs,
            targets,
            weights,
        })
    }

    /// 0: the outputs are a function of the prompt.
    fn floor(&self, _batch: &Batch) -> f64 {
        0.0
    }

    /// `ln(vocab - 1)`, exact.
    fn context_free_loss(&self) -> f64 {
        ((self.vocab - 1) as f64).ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use normscope_numeric::tolerance;
    use rand::SeedableRng;

    fn task(kind: TaskKind) -> Algorithmic {
        Algorithmic::new(&TaskConfig {
            kind,
            ..TaskConfig::default()
        })
        .unwrap()
    }

    fn tokens(b: Batch) -> TokenBatch {
        match b {
            Batch::Tokens(t) => t,
            _ => panic!("algorithmic tasks give tokens"),
        }
    }

    /// Checks the structure of 64 sequences; `expect(a)` is the output for prompt a.
    fn check(kind: TaskKind, expect: impl Fn(&[u32]) -> Vec<u32>) {
        let t = task(kind);
        let b = tokens(t.batch(&mut Rng::seed_from_u64(4), 64));
        let (k, sep) = (8, 15);
        assert_eq!(b.seq, 2 * k);
        for s in 0..b.size {
            let inp = &b.inputs[s * b.seq..(s + 1) * b.seq];
            let tgt = &b.targets[s * b.seq..(s + 1) * b.seq];
            let w = &b.weights[s * b.seq..(s + 1) * b.seq];
            let a = &inp[..k];
            assert!(a.iter().all(|&x| x < sep), "content only in the prompt");
            assert_eq!(inp[k], sep, "the separator follows the prompt");
            assert_eq!(
                &tgt[..b.seq - 1],
                &inp[1..],
                "targets are the inputs shifted"
            );
            assert_eq!(&tgt[k..], expect(a).as_slice(), "{kind:?}");
            assert_eq!(&inp[k + 1..], &tgt[k..2 * k - 1]);
            let counted: Vec<usize> = (0..b.seq).filter(|&i| w[i] > 0.5).collect();
            assert_eq!(counted, (k..2 * k).collect::<Vec<_>>());
            assert!(
                w.iter()
                    .all(|&x| x.abs() < tolerance::ZERO || (x - 1.0).abs() < tolerance::ZERO)
            );
        }
        // Every content symbol occurs (64 x 8 uniform draws over 15 symbols: each is missed
        // with probability (14/15)^512 ~ 5e-16).
        for x in 0..sep {
            assert!(b.inputs.contains(&x), "{x}");
        }
        assert!(t.floor(&Batch::Tokens(b)).abs() < tolerance::ZERO);
        assert!((t.context_free_loss() - 15f64.ln()).abs() < tolerance::ROUNDING);
    }

    #[test]
    fn copy_repeats_the_prompt() {
        check(TaskKind::Copy, |a| a.to_vec());
    }

    #[test]
    fn reverse_reverses_it() {
        check(TaskKind::Reverse, |a| a.iter().rev().copied().collect());
    }

    #[test]
    fn sort_sorts_it() {
        check(TaskKind::Sort, |a| {
            let mut v = a.to_vec();
            v.sort();
            v
        });
    }

    #[test]
    fn smallest_task_has_one_output() {
        let t = Algorithmic::new(&TaskConfig {
            kind: TaskKind::Reverse,
            vocab: 3,
            seq: 2,
            ..TaskConfig::default()
        })
        .unwrap();
        let b = tokens(t.batch(&mut Rng::seed_from_u64(0), 3));
        for s in 0..3 {
            assert_eq!(b.inputs[2 * s + 1], 2);
            assert_eq!(b.targets[2 * s + 1], b.inputs[2 * s]);
            assert!((b.weights[2 * s + 1] - 1.0).abs() < tolerance::ZERO);
            assert!(b.weights[2 * s].abs() < tolerance::ZERO);
        }
        assert!((t.context_free_loss() - 2f64.ln()).abs() < tolerance::ROUNDING);
    }

    #[test]
    fn other_kinds_are_refused() {
        let e = Algorithmic::new(&TaskConfig::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("regression") && e.contains("copy, reverse, sort"),
            "{e}"
        );
    }
}
