//! Sweeps of training runs (`normscope::train::sweep`): the failure rule, pairing and the
//! log-scale bisection of the maximum stable learning rate, on a tiny regression model.

use normscope::model::RawModel;
use normscope::train::config::RawTrain;
use normscope::train::sweep::{self, Bracket, Cell, Censor, FAIL_FRACTION};
use normscope::train::task::{TaskConfig, TaskKind};

fn base() -> RawTrain {
    let d = RawTrain::default();
    RawTrain {
        model: RawModel {
            depth: 4,
            branch: "relu-mlp".into(),
            width: 8,
            ..d.model
        },
        task: TaskConfig {
            kind: TaskKind::Regression,
            ..TaskConfig::default()
        },
        steps: 100,
        batch: 8,
        eval_every: 10,
        eval_batches: 2,
        log_every: 100,
        ..d
    }
}

fn cell(preset: &str, lr: f64) -> Cell {
    Cell {
        preset: preset.into(),
        depth: 4,
        optimizer: "adam".into(),
        lr,
        warmup: 0,
    }
}

#[test]
fn outcomes_follow_the_failure_rule_and_are_paired() {
    let cells = [cell("pre", 3e-3), cell("post", 3e-3), cell("post", 3.0)];
    let out = sweep::run(&base(), &cells, &[0, 1], &()).unwrap();
    assert_eq!(out.len(), 6);
    for o in &out {
        let threshold = o.floor + FAIL_FRACTION * (o.context_free - o.floor);
        assert_eq!(o.failed, o.diverged || o.final_loss > threshold, "{o:?}");
        assert!(o.curve.iter().all(|(_, e)| e.is_finite()));
        // Every run is scored on the one evaluation set: one floor for all.
        assert_eq!(o.floor.to_bits(), out[0].floor.to_bits());
    }
    // An absurd learning rate fails.
    assert!(out[4].failed && out[5].failed);
    // Same request, same bytes.
    let again = sweep::run(&base(), &cells, &[0, 1], &()).unwrap();
    for (a, b) in out.iter().zip(&again) {
        assert_eq!(a.final_loss.to_bits(), b.final_loss.to_bits());
    }
}

#[test]
fn bisection_brackets_the_stability_boundary() {
    let b = base();
    let brackets: Vec<Bracket> = ["pre", "post"]
        .iter()
        .map(|p| Bracket {
            cell: cell(p, 0.0),
            seed: 0,
            lo: 1e-2,
            hi: 10.0,
            lo_stable: None,
            hi_stable: None,
        })
        .collect();
    let iters = 3;
    let found = sweep::bisect(&b, &brackets, iters, &()).unwrap();
    let (task, eval) = sweep::task_and_eval(&b).unwrap();
    let failed = |c: &Cell| {
        let t = sweep::train_one(&b, task.as_ref(), &eval, c, 0, &Default::default()).unwrap();
        sweep::Outcome::new(c.clone(), 0, &t).failed
    };
    for m in &found {
        assert_eq!(m.censored, Censor::None, "{m:?}");
        let hi = m.unstable.expect("bracketed");
        // The final bracket's ratio is (hi/lo)^(2^-iters) of the starting one.
        let want = (10.0f64 / 1e-2).powf(0.5f64.powi(iters as i32));
        assert!(
            (hi / m.lr / want - 1.0).abs() < 1e-9,
            "{} {}",
            hi / m.lr,
            want
        );
        // Its ends are what the bisection says they are.
        assert!(!failed(&m.cell));
        assert!(failed(&m.cell.at_lr(hi)));
    }
    // Censoring: a bracket entirely above the boundary.
    let above = Bracket {
        lo: 50.0,
        hi: 100.0,
        ..brackets[0].clone()
    };
    let m = sweep::bisect(&b, &[above], 2, &()).unwrap();
    assert_eq!(m[0].censored, Censor::Below);
}

/// `run::run` and `sweep::run_jobs` share one `BatchCache` between their teacher-lm runs: each
/// run's log is the log of that run trained alone (its own stream, no cache), bit for bit;
/// regression (no cache) likewise.
#[test]
fn shared_batches_change_no_bit() {
    use normscope::train::{run, task};
    for kind in [TaskKind::TeacherLm, TaskKind::Regression] {
        let raw = RawTrain {
            presets: "pre,post".into(),
            seeds: "0,1".into(),
            steps: 12,
            eval_every: 6,
            log_every: 1,
            task: TaskConfig {
                kind,
                seq: 6,
                ..TaskConfig::default()
            },
            ..base()
        };
        let cfg = raw.check().unwrap();
        let shared = run::run(&cfg, &()).unwrap();
        let t = task::build(&cfg.task).unwrap();
        let mut er = run::eval_rng(cfg.task.teacher_seed);
        let eval: Vec<_> = (0..cfg.eval_batches)
            .map(|_| t.batch(&mut er, cfg.batch))
            .collect();
        let mut alone = Vec::new();
        for p in ["pre", "post"] {
            for s in [0, 1] {
                alone.extend(run::run_one(&cfg, t.as_ref(), (p, s), &eval, None, &()).unwrap());
            }
        }
        assert_eq!(shared.len(), alone.len(), "{kind:?}");
        for (a, b) in shared.iter().zip(&alone) {
            assert_eq!(a.value.to_bits(), b.value.to_bits(), "{kind:?} {a:?} {b:?}");
            assert_eq!((a.step, a.metric), (b.step, b.metric));
        }
        // A sweep over the same runs gives the same final losses as each run alone.
        let cells = [cell("pre", 1e-3), cell("post", 1e-3)];
        let jobs: Vec<(&Cell, u64)> = cells.iter().flat_map(|c| [(c, 0), (c, 1)]).collect();
        let swept = sweep::run_jobs(&raw, &jobs, &()).unwrap();
        for (o, (c, s)) in swept.iter().zip(&jobs) {
            let (task, eval) = sweep::task_and_eval(&raw).unwrap();
            let one = sweep::train_one(&raw, task.as_ref(), &eval, c, *s, &Default::default());
            let one = sweep::Outcome::new((*c).clone(), *s, &one.unwrap());
            assert_eq!(o.final_loss.to_bits(), one.final_loss.to_bits(), "{kind:?}");
        }
    }
}
