//! Sweeps of training runs (`normscope::train::sweep`): the runs' classes, pairing and the
//! widening log-scale search of the maximum stable learning rate, on a tiny regression model.

use normscope::model::RawModel;
use normscope::train::classify::Curve;
use normscope::train::config::RawTrain;
use normscope::train::search::{Censor, Plan};
use normscope::train::sweep::{self, Cell};
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
        preset: normscope::placement::find(preset).expect("a preset"),
        depth: 4,
        optimizer: "adam".into(),
        lr,
        warmup: 0,
    }
}

#[test]
fn outcomes_are_classified_and_paired() {
    let cells = [cell("pre", 3e-3), cell("post", 3e-3), cell("post", 3.0)];
    let out = sweep::run(&base(), &cells, &[0, 1], &()).unwrap();
    assert_eq!(out.len(), 6);
    for o in &out {
        // The class is the classifier's on the run's own curve, and failure its complement.
        let class = Curve {
            points: &o.curve,
            steps: 100,
            diverged: o.diverged,
            floor: o.floor,
            context_free: o.context_free,
        }
        .class();
        assert_eq!(o.class, class, "{o:?}");
        assert_eq!(o.failed, !class.stable());
        assert!(o.curve.iter().all(|(_, e)| e.is_finite()));
        // Every run is scored on the one evaluation set: one floor for all.
        assert_eq!(o.floor.to_bits(), out[0].floor.to_bits());
    }
    // An absurd learning rate fails, a modest one trains.
    assert!(out[4].failed && out[5].failed);
    assert!(!out[0].failed && !out[1].failed);
    // Same request, same bytes.
    let again = sweep::run(&base(), &cells, &[0, 1], &()).unwrap();
    for (a, b) in out.iter().zip(&again) {
        assert_eq!(a.final_loss.to_bits(), b.final_loss.to_bits());
    }
}

#[test]
fn the_search_brackets_the_stability_boundary() {
    let b = base();
    let plan = Plan {
        start: 1e-2,
        factor: 4.0,
        halvings: 2,
        min: 1e-4,
        max: 30.0,
    };
    let cells = [cell("pre", 0.0), cell("post", 0.0)];
    let jobs: Vec<(&Cell, u64)> = cells.iter().map(|c| (c, 0)).collect();
    let found = sweep::search(&b, &jobs, &plan, &()).unwrap();
    let prepared = sweep::Prepared::new(&b, 0).unwrap();
    let failed = |c: &Cell| prepared.outcome(c, 0).unwrap().failed;
    for ((s, runs), c) in found.iter().zip(&cells) {
        assert_eq!(s.censored, Censor::None, "{s:?}");
        let (lo, hi) = s.interval();
        // The final bracket's ratio is the plan's resolution.
        assert!(
            (hi / lo / plan.resolution() - 1.0).abs() < 1e-9,
            "{lo} {hi}"
        );
        // Its ends are what the search says they are, trained again alone.
        assert!(!failed(&c.at_lr(lo)));
        assert!(failed(&c.at_lr(hi)));
        // One outcome per rate tried, in order, agreeing with the search's record.
        assert_eq!(runs.len(), s.tried.len());
        for (o, (lr, stable)) in runs.iter().zip(&s.tried) {
            assert_eq!(o.cell.lr.to_bits(), lr.to_bits());
            assert_eq!(!o.failed, *stable);
        }
    }
    // Censoring: a plan whose smallest rate already fails.
    let above = Plan {
        start: 50.0,
        min: 50.0,
        max: 100.0,
        ..plan
    };
    let m = sweep::search(&b, &jobs[..1], &above, &()).unwrap();
    assert_eq!(m[0].0.censored, Censor::Below);
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
                alone.extend(
                    run::run_one(
                        &cfg,
                        t.as_ref(),
                        (normscope::placement::find(p).unwrap(), s),
                        &eval,
                        None,
                        &(),
                    )
                    .unwrap(),
                );
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
            let one = sweep::Outcome::of((*c).clone(), *s, 100, &one.unwrap());
            assert_eq!(o.final_loss.to_bits(), one.final_loss.to_bits(), "{kind:?}");
        }
    }
}

/// The runs of a cell's seeds trained together (`lr_search::run_cells`: the seeds of a cell in
/// parallel, sharing batches through one cache, on any number of threads) are the runs of each
/// seed searched alone, bit for bit: the same rates tried, the same classes, the same losses.
#[test]
fn a_cells_seeds_together_are_each_seed_alone() {
    use normscope::analyses::lr_search::{self, SearchCell};
    use normscope::analyses::tier::Tier;
    let tier = Tier {
        steps: 40,
        eval_every: 10,
        ..Tier::regression()
    };
    let plan = Plan {
        start: 1e-2,
        factor: 2.0,
        halvings: 1,
        min: 1e-4,
        max: 30.0,
    };
    let cells = [SearchCell {
        tier: 0,
        cell: Cell {
            depth: 3,
            ..cell("post", 0.0)
        },
    }];
    let seeds = [0, 1, 2, 3];
    let together = lr_search::run_cells(std::slice::from_ref(&tier), &cells, &seeds, &plan, &())
        .unwrap()
        .remove(0);
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let serial = one_thread.install(|| {
        lr_search::run_cells(std::slice::from_ref(&tier), &cells, &seeds, &plan, &())
            .unwrap()
            .remove(0)
    });
    // Each seed alone, in a fresh preparation (no shared cache), from the start the cell
    // gave it (the first seed's answer for the others).
    let start = together[0].search.point().clamp(plan.min, plan.max);
    for (k, s) in together.iter().enumerate() {
        let alone_plan = if k == 0 { plan } else { Plan { start, ..plan } };
        let p = sweep::Prepared::new(&tier.base().unwrap(), 0).unwrap();
        let (search, runs) = p.search(&cells[0].cell, s.seed, &alone_plan).unwrap();
        assert_eq!(search, s.search, "seed {}", s.seed);
        assert_eq!(serial[k].search, s.search, "seed {} on one thread", s.seed);
        for ((a, b), c) in runs.iter().zip(&s.runs).zip(&serial[k].runs) {
            assert_eq!(a.class, b.class);
            assert_eq!(a.final_loss.to_bits(), b.final_loss.to_bits());
            assert_eq!(c.final_loss.to_bits(), b.final_loss.to_bits());
            assert_eq!(a.curve.len(), b.curve.len());
        }
    }
}

/// A tier's longer budget (`tier::LongBudget`): the cells at or past its depth train its
/// updates, the shallower ones the tier's own, and a deep cell's runs are the runs of the tier
/// with its steps set to the long budget, bit for bit (what the `warmup` analysis relies on at
/// the `lm` tier's 48 blocks).
#[test]
fn a_long_budget_trains_the_deep_cells_longer() {
    use normscope::analyses::lr_search::{self, SearchCell};
    use normscope::analyses::tier::{LongBudget, Tier};
    let tier = Tier {
        steps: 20,
        eval_every: 5,
        long: Some(LongBudget {
            from_blocks: 3,
            steps: 60,
        }),
        ..Tier::regression()
    };
    let plan = Plan {
        start: 1e-2,
        factor: 2.0,
        halvings: 1,
        min: 1e-4,
        max: 30.0,
    };
    let at = |depth| SearchCell {
        tier: 0,
        cell: Cell {
            depth,
            ..cell("pre", 0.0)
        },
    };
    let cells = [at(2), at(3)];
    let found =
        lr_search::run_cells(std::slice::from_ref(&tier), &cells, &[0, 1], &plan, &()).unwrap();
    let last = |o: &sweep::Outcome| o.curve.last().unwrap().0;
    for (c, seeds) in cells.iter().zip(&found) {
        let steps = tier.steps_at(c.cell.depth);
        let runs: Vec<&sweep::Outcome> = seeds.iter().flat_map(|s| &s.runs).collect();
        assert!(!runs.is_empty());
        // No run goes past its budget; a run not stopped (collapsed) reaches it.
        for o in &runs {
            assert!(last(o) <= steps, "{} blocks: {}", c.cell.depth, last(o));
        }
        assert!(runs.iter().any(|o| last(o) == steps), "{}", c.cell.depth);
        // Each run is the run of the tier at that depth's budget, trained alone.
        let p = sweep::Prepared::new(&tier.at_blocks(c.cell.depth).base().unwrap(), 0).unwrap();
        for o in &runs {
            let alone = p.outcome(&o.cell, o.seed).unwrap();
            assert_eq!(alone.final_loss.to_bits(), o.final_loss.to_bits());
            assert_eq!(alone.curve, o.curve);
        }
    }
    assert_eq!((tier.steps_at(2), tier.steps_at(3)), (20, 60));
}
