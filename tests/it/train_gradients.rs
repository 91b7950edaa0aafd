//! The trainable model's whole-model gradients, for every preset x branch on small sizes:
//! against central finite differences of the loss, by the adjoint identity `<v, J u> = <J^T
//! v, u>` between the JVP and backward, and the init-time equivalence with the Monte Carlo
//! engine's network on the same seed.

use nalgebra::DMatrix;
use normscope::branch::Module;
use normscope::model::RawModel;
use normscope::monte_carlo::sampling::{McConfig, RawMc};
use normscope::numeric::rng;
use normscope::placement;
use normscope::spec::NormKind;
use normscope::tolerance;
use normscope::train::init;
use normscope::train::model::TrainModel;
use normscope::train::pass::{self, Input, Target};
use normscope::train::task::Io;
use rand::SeedableRng;

/// Branches the trainable model supports, with the input they are trained on.
const BRANCHES: [&str; 6] = [
    "linear",
    "relu-mlp",
    "gelu-mlp",
    "attention",
    "uniform-attention",
    "transformer",
];

const D: usize = 8;
const DEPTH: usize = 4;
const VOCAB: usize = 5;
const SEQ: usize = 3;
const BATCH: usize = 2;

fn config(branch: &str) -> McConfig {
    let raw = RawModel {
        depth: DEPTH,
        branch: branch.into(),
        width: D,
        tokens: SEQ,
        ..RawModel::default()
    };
    McConfig::new(
        &raw,
        &RawMc {
            heads: 2,
            ..RawMc::default()
        },
    )
    .expect("valid config")
}

fn batch() -> (Vec<u32>, Vec<u32>, Vec<f64>) {
    let n = BATCH * SEQ;
    let ids = (0..n).map(|t| ((t * 3 + 1) % VOCAB) as u32).collect();
    let targets = (0..n).map(|t| ((t * 2 + 3) % VOCAB) as u32).collect();
    let weights = (0..n).map(|t| if t % 3 == 0 { 0.0 } else { 1.0 }).collect();
    (ids, targets, weights)
}

/// GroupNorm's groups in the models below (blocks of 4 channels x 3 tokens).
const GROUPS: usize = 2;

/// Every (preset, branch) model at seed 1 with LayerNorm and learnable affine maps, plus every
/// preset with RMSNorm (gain only), without affine maps, and with no norms at all (GELU MLP:
/// smooth, so a finite-difference step cannot cross a ReLU kink), and on the Transformer with
/// BatchNorm (in training mode, and in evaluation mode on moved running statistics),
/// InstanceNorm, GroupNorm and DyT (learnable alpha; without affine maps on the GELU MLP),
/// each with every parameter moved off its init (so that gains differ from 1, ReZero's lambda
/// from 0, DyT's alpha from 0.5, and no gradient vanishes by symmetry).
fn models() -> Vec<(String, TrainModel)> {
    let mut out = Vec::new();
    let variants = BRANCHES
        .iter()
        .map(|b| (*b, NormKind::Layer, true, true))
        .chain([
            ("transformer", NormKind::Rms, true, true),
            ("gelu-mlp", NormKind::Layer, false, true),
            ("gelu-mlp", NormKind::Identity, true, true),
            ("transformer", NormKind::Batch, true, true),
            ("transformer", NormKind::Batch, true, false),
            ("transformer", NormKind::Instance, true, true),
            ("transformer", NormKind::Group, true, true),
            ("transformer", NormKind::Dyt, true, true),
            ("gelu-mlp", NormKind::Dyt, false, true),
        ]);
    for (branch, norm, affine, training) in variants {
        for p in placement::REGISTRY {
            let mut cfg = config(branch);
            cfg.model.norm = norm;
            cfg.model.groups = GROUPS;
            let spec = cfg.model.stack(p).expect("stack");
            let io = Io::Tokens {
                vocab: VOCAB,
                seq: SEQ,
            };
            let (ids, _, _) = batch();
            let mut m = init::model(&spec, &cfg, io, affine, 1, |m| {
                m.embed(Input::Tokens {
                    ids: &ids,
                    seq: SEQ,
                })
            });
            let mut r = rng::Rng::seed_from_u64(7);
            for w in m.params_mut() {
                let noise = normscope::monte_carlo::sample::gaussian(&mut r, w.nrows(), w.ncols());
                *w += noise * 0.1;
            }
            m.training = training;
            for n in m.norm_slots_mut() {
                if let Some(run) = &mut n.running {
                    let shift = normscope::monte_carlo::sample::gaussian(&mut r, D, 1);
                    for (c, s) in shift.iter().enumerate() {
                        run.mean[c] += 0.3 * s;
                        run.var[c] *= (0.5 * s).exp();
                    }
                }
            }
            out.push((
                format!(
                    "{} x {branch} ({norm:?}, affine {affine}, training {training})",
                    p.name
                ),
                m,
            ));
        }
    }
    out
}

fn loss_of(m: &TrainModel) -> f64 {
    let (ids, targets, weights) = batch();
    let input = Input::Tokens {
        ids: &ids,
        seq: SEQ,
    };
    let p = m.forward(input);
    pass::loss(
        &p.output,
        Target::Classes {
            ids: &targets,
            weights: &weights,
        },
    )
    .0
}

fn direction(m: &TrainModel, seed: u64) -> Vec<DMatrix<f64>> {
    let mut r = rng::Rng::seed_from_u64(seed);
    m.params()
        .iter()
        .map(|(_, w)| normscope::monte_carlo::sample::gaussian(&mut r, w.nrows(), w.ncols()))
        .collect()
}

fn moved(m: &TrainModel, dir: &[DMatrix<f64>], h: f64) -> TrainModel {
    let mut out = m.clone();
    for (w, d) in out.params_mut().into_iter().zip(dir) {
        *w += d * h;
    }
    out
}

fn dot(a: &[DMatrix<f64>], b: &[DMatrix<f64>]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x.dot(y)).sum()
}

#[test]
fn gradients_match_central_finite_differences() {
    let (ids, targets, weights) = batch();
    let input = Input::Tokens {
        ids: &ids,
        seq: SEQ,
    };
    for (name, m) in models() {
        let p = m.forward(input);
        let (_, g) = pass::loss(
            &p.output,
            Target::Classes {
                ids: &targets,
                weights: &weights,
            },
        );
        let grads = m.backward(input, &p, &g);
        let infos = m.params();
        assert_eq!(grads.len(), infos.len(), "{name}");
        // One direction per parameter tensor (so a wrong gradient is named), and one over all.
        let all = direction(&m, 11);
        for i in 0..=infos.len() {
            let dir: Vec<DMatrix<f64>> = all
                .iter()
                .enumerate()
                .map(|(j, d)| {
                    if i == infos.len() || i == j {
                        d.clone()
                    } else {
                        d * 0.0
                    }
                })
                .collect();
            let h = 1e-6;
            let fd = (loss_of(&moved(&m, &dir, h)) - loss_of(&moved(&m, &dir, -h))) / (2.0 * h);
            let an = dot(&grads, &dir);
            let what = infos.get(i).map_or("all".to_string(), |(p, _)| {
                format!("block {} {}", p.layer, p.name)
            });
            // Central differences: truncation O(h^2) ~ 1e-12 and rounding ~1e-16/h ~ 1e-10 of
            // unit-size losses; FINITE_DIFFERENCE (1e-6) leaves room for curvature. h = 1e-6,
            // not 1e-5: with GroupNorm and InstanceNorm over 3 tokens, a step of 1e-5 crosses
            // a ReLU kink of the Transformer's MLP in 8 directions (measured: mixln's block 2
            // w1 gives -3.5792 at h = 1e-5, -3.5727 at 3e-6, and the backward's -3.5673 at
            // 1e-6 and 1e-7); every case agrees at 1e-6 and at 1e-7.
            assert!(
                (fd - an).abs() <= tolerance::FINITE_DIFFERENCE * (1.0 + an.abs()),
                "{name} {what}: finite difference {fd} vs backward {an}"
            );
        }
    }
}

#[test]
fn adjoint_identity_holds_for_the_whole_model() {
    let (ids, _, _) = batch();
    let input = Input::Tokens {
        ids: &ids,
        seq: SEQ,
    };
    for (name, m) in models() {
        let p = m.forward(input);
        let u = direction(&m, 21);
        let ju = m.jvp(input, &p, &u);
        let v = normscope::monte_carlo::sample::gaussian(
            &mut rng::Rng::seed_from_u64(31),
            p.output.nrows(),
            p.output.ncols(),
        );
        let jtv = m.backward(input, &p, &v);
        let (lhs, rhs) = (v.dot(&ju), dot(&jtv, &u));
        assert!(
            (lhs - rhs).abs() <= tolerance::ACCUMULATED * (1.0 + lhs.abs()),
            "{name}: <v, J u> = {lhs} vs <J^T v, u> = {rhs}"
        );
    }
}

#[test]
fn at_init_the_trainable_model_is_the_monte_carlo_network() {
    // The Monte Carlo engine's network 0 of each stack (its own seed stream), made into a
    // trainable model: the streams and the branch weights' gradients are the engine's, bit for
    // bit (affine gains 1 and biases 0 act exactly).
    for p in placement::REGISTRY {
        for branch in BRANCHES {
            let cfg = config(branch);
            let spec = cfg.model.stack(p).expect("stack");
            let hash = rng::config_hash(&cfg.canonical(spec.seed_name()));
            let mut r = rng::network_rng(cfg.seed, hash, 0);
            let net = normscope::monte_carlo::sampler::network::<f64>(&spec, &cfg, &mut r);
            let fw = net.forward(|_, _, _| {});
            let omegas: Vec<f64> = fw.blocks.iter().map(|b| b.alpha).collect();
            let head = normscope::monte_carlo::sample::gaussian(&mut r, 3, D);
            let input = normscope::train::model::InputMap::Linear(DMatrix::identity(D, D));
            let m = TrainModel::from_network(net.clone(), input, head.clone(), true, &omegas);
            let pass = m.forward(Input::Vectors(&net.input));
            for (l, (a, b)) in pass.xs.iter().zip(&fw.xs).enumerate() {
                assert_eq!(a, b, "{} x {branch}: stream x_{l}", p.name);
            }
            let g = normscope::monte_carlo::sample::gaussian(&mut r, 3, net.input.ncols());
            let grads = m.backward(Input::Vectors(&net.input), &pass, &g);
            // Network::backward takes dL/d(output) after the final norm: the head's H^T g.
            let bw = net.backward(&fw, &normscope::numeric::gemm::tn(&head, &g));
            let infos = m.params();
            for (l, wg) in bw.weight_grads.iter().enumerate() {
                let names: Vec<&str> = net.branches[l].params().iter().map(|p| p.0).collect();
                for (k, want) in wg.iter().enumerate() {
                    let i = infos
                        .iter()
                        .position(|(p, _)| p.layer == l + 1 && p.name == names[k])
                        .expect("parameter listed");
                    let got = &grads[i];
                    assert!(
                        (got - want).norm() <= tolerance::ROUNDING_CHAIN * (1.0 + want.norm()),
                        "{} x {branch}: block {} {} gradient",
                        p.name,
                        l + 1,
                        names[k]
                    );
                }
            }
        }
    }
}

#[test]
fn at_init_every_norm_gives_the_monte_carlo_streams() {
    // The other norms through the trainable model's norm slots (affine 1 and 0, DyT's alpha
    // 0.5, BatchNorm in training mode): the Monte Carlo engine's streams bit for bit, its
    // columns one sequence.
    for norm in [
        NormKind::Batch,
        NormKind::Instance,
        NormKind::Group,
        NormKind::Dyt,
    ] {
        for p in ["pre", "post", "deepnorm"] {
            let mut cfg = config("relu-mlp");
            cfg.model.norm = norm;
            cfg.model.groups = GROUPS;
            let spec = cfg
                .model
                .stack(normscope::placement::find(p).unwrap())
                .expect("stack");
            let hash = rng::config_hash(&cfg.canonical(spec.seed_name()));
            let mut r = rng::network_rng(cfg.seed, hash, 0);
            let net = normscope::monte_carlo::sampler::network::<f64>(&spec, &cfg, &mut r);
            let fw = net.forward(|_, _, _| {});
            let omegas = vec![1.0; DEPTH];
            let head = normscope::monte_carlo::sample::gaussian(&mut r, 3, D);
            let input = normscope::train::model::InputMap::Linear(DMatrix::identity(D, D));
            let m = TrainModel::from_network(net.clone(), input, head, true, &omegas);
            let seq = net.input.ncols();
            let pass = m.forward_from(net.input.clone(), seq);
            assert_eq!(pass.xs, fw.xs, "{p} with {norm:?}");
        }
    }
}

#[test]
fn regression_models_have_exact_gradients() {
    // The linear input map and the mean-squared-error head, every preset, ReLU MLP.
    let x = normscope::monte_carlo::sample::gaussian(&mut rng::Rng::seed_from_u64(3), 5, 4);
    let y = normscope::monte_carlo::sample::gaussian(&mut rng::Rng::seed_from_u64(4), 3, 4);
    let io = Io::Vectors { d_in: 5, d_out: 3 };
    for p in placement::REGISTRY {
        let cfg = config("relu-mlp");
        let spec = cfg.model.stack(p).expect("stack");
        let m = init::model(&spec, &cfg, io, true, 2, |m| m.embed(Input::Vectors(&x)));
        let loss = |m: &TrainModel| {
            let f = m.forward(Input::Vectors(&x)).output;
            pass::loss(&f, Target::Values(&y)).0
        };
        let pass = m.forward(Input::Vectors(&x));
        let (_, g) = pass::loss(&pass.output, Target::Values(&y));
        let grads = m.backward(Input::Vectors(&x), &pass, &g);
        let dir = direction(&m, 5);
        let h = 1e-5;
        let fd = (loss(&moved(&m, &dir, h)) - loss(&moved(&m, &dir, -h))) / (2.0 * h);
        let an = dot(&grads, &dir);
        assert!(
            (fd - an).abs() <= tolerance::FINITE_DIFFERENCE * (1.0 + an.abs()),
            "{}: finite difference {fd} vs backward {an}",
            p.name
        );
        let ju = m.jvp(Input::Vectors(&x), &pass, &dir);
        let jtv = m.backward(Input::Vectors(&x), &pass, &y);
        let (lhs, rhs) = (y.dot(&ju), dot(&jtv, &dir));
        assert!(
            (lhs - rhs).abs() <= tolerance::ACCUMULATED * (1.0 + lhs.abs()),
            "{}: {lhs} vs {rhs}",
            p.name
        );
    }
}

#[test]
fn a_training_run_profiles_admin_on_its_first_batch() {
    // init::model's omegas follow Admin's profiling code (Transformer-Clinic's
    // adaptive-profiling): omega_1 = 1, omega_{l+1} = sqrt(np.var(omega_l x_{l-1}) +
    // np.var(o_l)) over the stream x_{l-1} and branch output o_l of the trainable model's own
    // forward pass on the first batch (recomputed here from the pass, not from the Monte Carlo
    // network), and the attention of a training run is causal.
    let np_var = |m: &DMatrix<f64>| {
        let n = m.len() as f64;
        let mean = m.iter().sum::<f64>() / n;
        m.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n
    };
    let cfg = config("transformer");
    let spec = cfg
        .model
        .stack(normscope::placement::find("admin").unwrap())
        .expect("stack");
    let (ids, _, _) = batch();
    let input = Input::Tokens {
        ids: &ids,
        seq: SEQ,
    };
    let io = Io::Tokens {
        vocab: VOCAB,
        seq: SEQ,
    };
    let m = init::model(&spec, &cfg, io, true, 4, |m| m.embed(input));
    let p = m.forward(input);
    let mut want: f64 = 1.0;
    for (l, (b, c)) in m.blocks.iter().zip(&p.blocks).enumerate() {
        let normscope::train::model::Skip::Learnable(omega) = &b.skip else {
            panic!("Admin's omega is learnable")
        };
        for o in omega.iter() {
            assert!(
                (o - want).abs() <= tolerance::ROUNDING_CHAIN * want,
                "{o} vs {want}"
            );
        }
        want = (np_var(&(&p.xs[l] * want)) + np_var(&c.out)).sqrt();
        if let normscope::branch::Branch::Attention(a) = &b.branch {
            assert!(a.causal && a.seq == SEQ);
        }
    }
}

#[test]
fn stream_gradients_are_the_gradients_at_the_ends_of_the_stack() {
    // backward_with_streams' ||dL/dx_l||^2 at both ends, by two other routes: for one
    // sequence, dL/dx_0 is the position embeddings' gradient column for column; without an
    // output norm, dL/dx_L = H^T dL/df.
    let (ids, targets, weights) = batch();
    let one = |v: &[u32]| v[..SEQ].to_vec();
    let (ids, targets, weights) = (one(&ids), one(&targets), weights[..SEQ].to_vec());
    let input = Input::Tokens {
        ids: &ids,
        seq: SEQ,
    };
    for (name, m) in models() {
        let normscope::train::model::InputMap::Embedding { .. } = m.input else {
            continue;
        };
        let p = m.forward(input);
        let target = Target::Classes {
            ids: &targets,
            weights: &weights,
        };
        let (_, g) = pass::loss(&p.output, target);
        let (grads, stream_sq) = m.backward_with_streams(input, &p, &g);
        assert_eq!(stream_sq.len(), DEPTH + 1, "{name}");
        let positions = grads[1].norm_squared();
        assert!(
            (stream_sq[0] - positions).abs() <= tolerance::ROUNDING_CHAIN * positions,
            "{name}: x_0: {} vs {positions}",
            stream_sq[0]
        );
        if m.final_norm.is_none() {
            let top = normscope::numeric::gemm::tn(&m.head, &g).norm_squared();
            assert!(
                (stream_sq[DEPTH] - top).abs() <= tolerance::ROUNDING_CHAIN * top,
                "{name}: x_L: {} vs {top}",
                stream_sq[DEPTH]
            );
        }
    }
}
