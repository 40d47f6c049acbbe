//! A launch: one `Program` per physical NeuronCore, sharing HBM.
//!
//! Under LNC=2 (language.md §3.2) a kernel runs on two physical cores that
//! share one HBM address space; each core has its own engines, queues,
//! registers, semaphores, SBUF, PSUM and DMA engines. A `Launch` holds one
//! `Program` per core, so everything that handles a `Program` (the
//! backend, the verifier, the printer) keeps describing one core.
//!
//! # Sharing
//!
//! * The kernel's **arguments** (`.arg` tensors: inputs, outputs, inouts)
//!   are shared: every core declares the same arguments (names, dtypes,
//!   shapes and kinds, in the same order) and they name the same bytes.
//! * **Internal** HBM tensors (`.hbm`, e.g. `private_hbm` buffers and
//!   spills) belong to their core, even when two cores use the same name.
//! * **Shared** internal HBM tensors (`.hbm NAME TYPE shared`, internal
//!   `nl.shared_hbm` buffers) are one tensor for all cores: every core
//!   declares the same ones (name, dtype, shape, and data when they hold
//!   constant bytes on entry) and a name means the same bytes on every
//!   core.
//! * **Semaphores** belong to their core; cores order against each other
//!   only through `core_barrier`: the n-th `core_barrier` of queue `Q` on
//!   one core pairs with the n-th `core_barrier` of queue `Q` on every other
//!   core, and completes when all of them have issued. Everything that
//!   happens before any of the paired barriers happens before the
//!   completion of each. `sendrecv` pairs the same way (barriers and
//!   exchanges of a queue share one rank count) and swaps the two cores'
//!   `src` tiles into each other's `dst`.
//!
//! A launch of one core is exactly a `Program`; its text is the program's
//! text, unchanged.
//!
//! # Text form
//!
//! A multi-core launch prints the `.target` line, then one section per
//! core, each starting with `.core N` (cores in order from 0) followed by
//! that core's program without its `.target` line:
//!
//! ```text
//! .target trn3
//!
//! .core 0
//! .arg a f32[128,512] input
//! .queue dma0
//!   ...
//!
//! .core 1
//! .arg a f32[128,512] input
//! .queue dma0
//!   ...
//! ```
//!
//! Text without `.core` lines assembles as a one-core launch.

use std::fmt::Write;

use crate::program::{Program, TensorKind};
use crate::target::Target;
use crate::text::{AsmError, assemble, print};
use crate::verify::{Rule, Verified, VerifyError, verify};

/// One program per physical core of a launch (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    /// Core `i`'s program; at least one.
    pub cores: Vec<Program>,
}

impl Launch {
    /// A one-core launch.
    pub fn single(program: Program) -> Launch {
        Launch {
            cores: vec![program],
        }
    }

    /// The target (core 0's; the verifier checks the others agree).
    pub fn target(&self) -> Target {
        self.cores.first().map_or(Target::Trn3, |p| p.target)
    }

    /// True when the launch uses more than one core.
    pub fn is_multi_core(&self) -> bool {
        self.cores.len() > 1
    }

    /// Core `i`'s program.
    pub fn core(&self, i: usize) -> Option<&Program> {
        self.cores.get(i)
    }

    /// The program that defines the kernel's arguments (core 0's): every
    /// core declares the same ones.
    pub fn main(&self) -> &Program {
        // A launch is built with at least one core; an empty one (only a
        // hand-made value) reads as an empty program.
        static EMPTY: std::sync::OnceLock<Program> = std::sync::OnceLock::new();
        self.cores
            .first()
            .unwrap_or_else(|| EMPTY.get_or_init(|| Program::new(Target::Trn3)))
    }
}

impl std::fmt::Display for Launch {
    /// Prints the launch in canonical `.nkasm` form (`print_launch`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&print_launch(self))
    }
}

/// Prints a launch: a one-core launch exactly as `print` prints its
/// program, a multi-core launch in `.core` sections (module doc).
pub fn print_launch(launch: &Launch) -> String {
    if launch.cores.len() == 1 {
        return print(&launch.cores[0]);
    }
    let mut out = String::new();
    let _ = writeln!(out, ".target {}", launch.target().name());
    for (i, program) in launch.cores.iter().enumerate() {
        let _ = writeln!(out, "\n.core {i}");
        let text = print(program);
        // Every printed program starts with its `.target` line.
        let body = text.split_once('\n').map_or("", |(_, rest)| rest);
        out.push_str(body);
    }
    out
}

/// Assembles a launch: text without `.core` lines is one core's program
/// (`assemble`); otherwise each `.core N` section is assembled as a
/// program of the target given before the first section. Error spans are
/// byte ranges of `text`.
pub fn assemble_launch(text: &str) -> Result<Launch, Vec<AsmError>> {
    // Lines with their byte offsets, and the `.core` lines among them.
    let mut lines = Vec::new();
    let mut offset = 0;
    for raw in text.split_inclusive('\n') {
        lines.push((offset, raw));
        offset += raw.len();
    }
    let directive = |raw: &str| -> Option<String> {
        let code = raw.split('#').next().unwrap_or("");
        let mut words = code.split_whitespace();
        (words.next() == Some(".core")).then(|| words.collect::<Vec<_>>().join(" "))
    };
    let mut sections: Vec<usize> = Vec::new();
    let mut errors = Vec::new();
    for (i, &(base, raw)) in lines.iter().enumerate() {
        let Some(arg) = directive(raw) else {
            continue;
        };
        let span = crate::text::byte_range(base, base + raw.trim_end().len());
        match arg.parse::<usize>() {
            Ok(n) if n == sections.len() => sections.push(i),
            Ok(n) => errors.push(AsmError {
                span,
                message: format!(
                    "`.core {n}` out of order: cores are numbered from 0 in order, expected `.core {}`",
                    sections.len()
                ),
            }),
            Err(_) => errors.push(AsmError {
                span,
                message: "`.core` needs a core number, e.g. `.core 0`".into(),
            }),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if sections.is_empty() {
        return assemble(text).map(Launch::single);
    }
    // Before the first section only `.target`, blank lines and comments.
    for &(base, raw) in &lines[..sections[0]] {
        let code = raw.split('#').next().unwrap_or("").trim();
        if !code.is_empty() && !code.starts_with(".target") {
            errors.push(AsmError {
                span: crate::text::byte_range(base, base + raw.trim_end().len()),
                message: "only `.target` may come before the first `.core` section".into(),
            });
        }
    }
    let mut cores = Vec::new();
    for (k, &first) in sections.iter().enumerate() {
        let end = sections.get(k + 1).copied().unwrap_or(lines.len());
        // The section's text at its own byte offsets: every other line
        // (other sections, the `.core` line itself) is blanked, so spans
        // stay offsets into `text`.
        let mut section = String::with_capacity(text.len());
        for (i, &(_, raw)) in lines.iter().enumerate() {
            let keep = (i > first && i < end)
                || (i < sections[0]
                    && raw
                        .split('#')
                        .next()
                        .is_some_and(|c| c.trim().starts_with(".target")));
            if keep {
                section.push_str(raw);
            } else {
                section.extend(raw.chars().map(|c| if c == '\n' { '\n' } else { ' ' }));
                // Multi-byte characters become one space each; pad to keep
                // the byte length.
                let pad = raw.len() - raw.chars().count();
                section.extend(std::iter::repeat_n(' ', pad));
            }
        }
        match assemble(&section) {
            Ok(p) => cores.push(p),
            Err(e) => errors.extend(e),
        }
    }
    if errors.is_empty() {
        Ok(Launch { cores })
    } else {
        errors.sort_by_key(|e| (e.span.start, e.span.end));
        errors.dedup();
        Err(errors)
    }
}

/// `items` shown by `show`, separated by commas.
fn list_text<T>(items: &[T], show: impl Fn(&T) -> String) -> String {
    items.iter().map(show).collect::<Vec<_>>().join(", ")
}

/// Verifies a launch: every core's program (`verify`, errors carry the
/// core when there are several), one or at most the target's `max_lnc`
/// cores of one target, the same arguments and `shared` tensors (with
/// the same data) on every core, `core_barrier`
/// only in multi-core launches, and the same number of `core_barrier`s in
/// each queue on every core (a barrier without a partner never completes).
/// On success the token proves `launch` verified.
///
/// The cores' programs are verified on a thread each; the errors come in
/// the same order as from one thread.
pub fn verify_launch(launch: &Launch) -> Result<Verified<'_, Launch>, Vec<VerifyError>> {
    let per_core: Vec<Vec<VerifyError>> = std::thread::scope(|scope| {
        let others: Vec<_> = launch
            .cores
            .iter()
            .skip(1)
            .map(|p| scope.spawn(move || verify(p).err().unwrap_or_default()))
            .collect();
        let first = launch
            .cores
            .first()
            .map(|p| verify(p).err().unwrap_or_default());
        first
            .into_iter()
            .chain(others.into_iter().map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            }))
            .collect()
    });
    let errors = launch_errors(launch, Some(per_core));
    if errors.is_empty() {
        Ok(Verified::new(launch))
    } else {
        Err(errors)
    }
}

/// The rules of [`verify_launch`] that concern the launch as a whole
/// (everything but each core's own `verify`), for a caller whose cores'
/// programs are verified already: the backend, which verifies every
/// program as it emits it. No token: only [`verify_launch`] gives one.
pub fn verify_launch_rules(launch: &Launch) -> Result<(), Vec<VerifyError>> {
    let errors = launch_errors(launch, None);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The errors of [`verify_launch`], with `per_core` the errors of each
/// core's `verify` (none to leave them out).
fn launch_errors(launch: &Launch, per_core: Option<Vec<Vec<VerifyError>>>) -> Vec<VerifyError> {
    let mut per_core = per_core.map(Vec::into_iter);
    let mut errors = Vec::new();
    let multi = launch.is_multi_core();
    let plain = |rule: Rule, message: String| VerifyError {
        core: None,
        queue: None,
        index: None,
        mnemonic: None,
        line: None,
        decl: None,
        rule,
        field: None,
        message,
    };
    if launch.cores.is_empty() {
        return vec![plain(
            Rule::LaunchCores,
            "a launch needs at least one core".into(),
        )];
    }
    let target = launch.target();
    let max = target.figures().max_lnc as usize;
    if launch.cores.len() > max {
        errors.push(plain(
            Rule::LaunchCores,
            format!(
                "a launch on {target} uses at most {max} cores, this one has {}",
                launch.cores.len()
            ),
        ));
    }
    for (c, p) in launch.cores.iter().enumerate() {
        let core = u8::try_from(c).unwrap_or(u8::MAX);
        if p.target != target {
            errors.push(VerifyError {
                core: multi.then_some(core),
                ..plain(
                    Rule::LaunchTarget,
                    format!("core {c} is compiled for {}, core 0 for {target}", p.target),
                )
            });
        }
        let own = per_core
            .as_mut()
            .and_then(Iterator::next)
            .unwrap_or_default();
        errors.extend(own.into_iter().map(|mut e| {
            e.core = multi.then_some(core);
            e
        }));
        for stream in &p.queues {
            for (i, inst) in stream.insts.iter().enumerate() {
                if inst.op.is_paired() && !multi {
                    errors.push(VerifyError {
                        queue: Some(stream.queue),
                        index: Some(i),
                        mnemonic: Some(inst.op.mnemonic()),
                        line: inst.line,
                        ..plain(Rule::PairedOneCore, format!(
                            "`{}` needs a launch of two cores (LNC=2); this program runs on one",
                            inst.op.mnemonic()
                        ))
                    });
                }
            }
        }
        if c == 0 {
            continue;
        }
        let main = &launch.cores[0];
        // The cores disagree on `what`, which they share.
        let unshared = |rule: Rule, what: &str, mine: String, theirs: String| VerifyError {
            core: Some(core),
            ..plain(
                rule,
                format!(
                    "the cores of a launch share {what}, but core {c} declares [{mine}] and core 0 [{theirs}]"
                ),
            )
        };
        let mine: Vec<_> = p.args().map(|(_, t)| t).collect();
        let theirs: Vec<_> = main.args().map(|(_, t)| t).collect();
        if mine != theirs {
            let show = |ts: &[&crate::program::HbmTensor]| {
                list_text(ts, |t| {
                    format!("{} {}{:?} {}", t.name, t.dtype, t.shape, t.kind.name())
                })
            };
            errors.push(unshared(
                Rule::LaunchArguments,
                "the kernel's arguments",
                show(&mine),
                show(&theirs),
            ));
        }
        let shared = |p: &Program| -> Vec<(String, crate::DType, Vec<u64>)> {
            let mut v: Vec<_> = p
                .hbm
                .iter()
                .filter(|t| t.kind == TensorKind::Shared)
                .map(|t| (t.name.clone(), t.dtype, t.shape.clone()))
                .collect();
            v.sort();
            v
        };
        let (mine, theirs) = (shared(p), shared(main));
        if mine != theirs {
            let show = |ts: &[(String, crate::DType, Vec<u64>)]| {
                if ts.is_empty() {
                    "none".to_owned()
                } else {
                    list_text(ts, |(n, d, s)| format!("{n} {d}{s:?}"))
                }
            };
            errors.push(unshared(
                Rule::LaunchShared,
                "their `shared` HBM tensors",
                show(&mine),
                show(&theirs),
            ));
        }
        for t in p.hbm.iter().filter(|t| t.kind == TensorKind::Shared) {
            let theirs = main
                .hbm
                .iter()
                .find(|m| m.kind == TensorKind::Shared && m.name == t.name);
            if let Some(m) = theirs
                && m.data != t.data
            {
                errors.push(VerifyError {
                    core: Some(core),
                    ..plain(
                        Rule::LaunchSharedData,
                        format!(
                            "the `shared` HBM tensor `{}` is one tensor on every core, but core {c} gives it other data on entry than core 0",
                            t.name
                        ),
                    )
                });
            }
        }
        for stream in &p.queues {
            // The paired instructions of a queue, in order.
            let paired = |insts: &[crate::inst::Instruction]| -> Vec<&'static str> {
                insts
                    .iter()
                    .filter(|i| i.op.is_paired())
                    .map(|i| i.op.mnemonic())
                    .collect()
            };
            let mine = paired(&stream.insts);
            let theirs = main.stream(stream.queue).map_or_else(Vec::new, paired);
            if mine != theirs {
                let list = |v: &[&str]| {
                    if v.is_empty() {
                        "none".to_owned()
                    } else {
                        v.iter()
                            .map(|m| format!("`{m}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                };
                let message = if mine.iter().all(|m| *m == "core_barrier")
                    && theirs.iter().all(|m| *m == "core_barrier")
                {
                    let barriers = |n: usize| {
                        if n == 1 {
                            "1 `core_barrier`".to_owned()
                        } else {
                            format!("{n} `core_barrier`s")
                        }
                    };
                    format!(
                        "{} in this queue but {} in the same queue of core 0; each barrier pairs with the one of the same rank on the other core",
                        barriers(mine.len()),
                        barriers(theirs.len())
                    )
                } else {
                    format!(
                        "the paired instructions of this queue ({}) differ from those of the same queue of core 0 ({}); each pairs with the one of the same rank on the other core",
                        list(&mine),
                        list(&theirs)
                    )
                };
                errors.push(VerifyError {
                    core: Some(core),
                    queue: Some(stream.queue),
                    ..plain(Rule::LaunchPairing, message)
                });
            }
        }
        for stream in &main.queues {
            if p.stream(stream.queue).is_none() && stream.insts.iter().any(|i| i.op.is_paired()) {
                errors.push(VerifyError {
                    core: Some(core),
                    queue: Some(stream.queue),
                    ..plain(
                        Rule::LaunchPairing,
                        "core 0 has `core_barrier`s or `sendrecv`s in this queue but this core has no such queue"
                            .into(),
                    )
                });
            }
        }
    }
    errors
}

/// The number of physical cores a grid of `instances` instances with grid
/// shape `grid` runs on; `lnc` is an explicit request. A grid of exactly
/// two instances (`--grid 2`) is an LNC=2 launch on a target that has
/// LNC=2, every other grid runs on one core, and `lnc` 2 splits an even
/// number of instances over two cores (`nkic_backend::cores` module doc).
///
/// Errors (a message for the caller's diagnostic) when `lnc` is neither 1
/// nor 2, or is 2 for a target without LNC=2 or for an odd number of
/// instances.
pub fn launch_cores(
    target: Target,
    grid: &[u32],
    instances: usize,
    lnc: Option<u32>,
) -> Result<usize, String> {
    let max = target.figures().max_lnc as usize;
    match lnc {
        None => Ok(if grid == [2] && instances == 2 && max >= 2 {
            2
        } else {
            1
        }),
        Some(1) => Ok(1),
        Some(2) if max < 2 => Err(format!("{target} has no LNC=2")),
        Some(2) if instances < 2 || !instances.is_multiple_of(2) => Err(format!(
            "LNC=2 splits the grid's instances over two cores, but the grid has {instances} instance{}",
            if instances == 1 { "" } else { "s" }
        )),
        Some(2) => Ok(2),
        Some(n) => Err(format!("LNC is 1 or 2, not {n}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CORE: &str = ".arg a f32[128,4] input\n.sem s\n\n.queue gpsimd\n  core_barrier signal(s)\n  nop wait(s>=1)\n";

    fn two_cores() -> String {
        format!(".target trn2\n\n.core 0\n{CORE}\n.core 1\n{CORE}")
    }

    #[test]
    fn a_two_core_launch_round_trips() {
        let text = two_cores();
        let launch = assemble_launch(&text).expect("assembles");
        assert_eq!(launch.cores.len(), 2);
        assert_eq!(launch.target(), Target::Trn2);
        assert!(launch.cores.iter().all(|p| p.target == Target::Trn2));
        assert_eq!(print_launch(&launch), text);
        assert_eq!(launch.to_string(), text);
        assert_eq!(verify_launch(&launch).err(), None);
    }

    #[test]
    fn sections_are_numbered_in_order_and_nothing_precedes_them() {
        let errors = assemble_launch(".target trn3\n.core 1\n").expect_err("out of order");
        assert_eq!(errors[0].span, 13..20);
        assert!(errors[0].message.contains("expected `.core 0`"));
        let text = ".target trn3\n.sem x\n.core 0\n";
        let errors = assemble_launch(text).expect_err("a directive before the sections");
        assert_eq!(errors[0].span, 13..19);
        // An error inside a section keeps its offset in the whole text.
        let text = format!(".target trn3\n.core 0\n{CORE}  frob\n");
        let errors = assemble_launch(&text).expect_err("unknown instruction");
        let at = text.find("frob").unwrap_or_default();
        assert_eq!(errors[0].span.start as usize, at, "{errors:?}");
    }

    #[test]
    fn the_launch_verifier_checks_arguments_and_barriers() {
        let one = assemble_launch(&format!(".target trn3\n{CORE}")).expect("one core");
        let errors = verify_launch(&one).expect_err("a barrier on one core");
        assert_eq!(errors[0].rule, Rule::PairedOneCore);
        assert_eq!(
            errors[0].message,
            "`core_barrier` needs a launch of two cores (LNC=2); this program runs on one"
        );
        assert_eq!(errors[0].core, None);

        let other = CORE.replace("f32[128,4]", "f32[128,8]");
        let text = format!(".target trn3\n\n.core 0\n{CORE}\n.core 1\n{other}");
        let errors = verify_launch(&assemble_launch(&text).expect("assembles"))
            .expect_err("different arguments");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].core, Some(1));
        assert_eq!(errors[0].rule, Rule::LaunchArguments);
        assert!(
            errors[0]
                .to_string()
                .starts_with("core 1: the cores of a launch share the kernel's arguments"),
            "{}",
            errors[0]
        );

        let three = format!(".target trn3\n\n.core 0\n{CORE}\n.core 1\n{CORE}\n.core 2\n{CORE}");
        let errors =
            verify_launch(&assemble_launch(&three).expect("assembles")).expect_err("three cores");
        assert_eq!(errors[0].rule, Rule::LaunchCores);
        assert_eq!(
            errors[0].message,
            "a launch on trn3 uses at most 2 cores, this one has 3"
        );

        // Per-core program errors carry the core.
        let bad = CORE.replace(".queue gpsimd", ".queue dma0");
        let text = format!(".target trn3\n\n.core 0\n{CORE}\n.core 1\n{bad}");
        let errors = verify_launch(&assemble_launch(&text).expect("assembles"))
            .expect_err("a barrier on a DMA queue");
        assert!(
            errors
                .iter()
                .any(|e| e.core == Some(1) && e.queue == Some(crate::Queue::Dma(0))),
            "{errors:?}"
        );
    }

    /// `verify_launch_rules` reports the rules across cores only, those
    /// of `verify_launch` in the same order; the cores' own errors (which
    /// `verify_launch` finds on a thread each) come first per core, core
    /// by core, as from one thread.
    #[test]
    fn the_launch_rules_alone_leave_out_the_cores_own_errors() {
        let bad = CORE.replace(".queue gpsimd", ".queue dma0");
        let wide = bad.replace("f32[128,4]", "f32[128,8]");
        let text = format!(".target trn3\n\n.core 0\n{bad}\n.core 1\n{wide}");
        let launch = assemble_launch(&text).expect("assembles");
        let all = verify_launch(&launch).expect_err("both kinds of errors");
        let own: Vec<_> = launch
            .cores
            .iter()
            .enumerate()
            .flat_map(|(c, p)| {
                let core = u8::try_from(c).ok();
                crate::verify(p)
                    .expect_err("a barrier on a DMA queue")
                    .into_iter()
                    .map(move |e| VerifyError { core, ..e })
            })
            .collect();
        assert!(own.len() >= 2, "{own:?}");
        let rules = verify_launch_rules(&launch).expect_err("different arguments");
        assert_eq!(rules.len(), 1, "{rules:?}");
        assert_eq!(rules[0].rule, Rule::LaunchArguments);
        // Core 0's own errors, then core 1's, then the launch rule that
        // core 1 breaks.
        let core0 = own.iter().filter(|e| e.core == Some(0)).count();
        assert_eq!(all[..core0], own[..core0]);
        assert_eq!(all[core0..all.len() - 1], own[core0..]);
        assert_eq!(all[all.len() - 1], rules[0]);
        assert_eq!(
            verify_launch_rules(&assemble_launch(&two_cores()).expect("assembles")),
            Ok(())
        );
    }
}
