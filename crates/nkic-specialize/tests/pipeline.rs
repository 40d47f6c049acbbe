//! Tests of the pipeline's data outputs that snapshots do not show well:
//! the hover table, the effective configuration, the caller's arguments
//! overriding directives, module loading through the loader, and
//! determinism.

use nkic_diag::SourceMap;
use nkic_isa::DType;
use nkic_specialize::{ArgSpec, ConstValue, NoModules, SpecializeConfig, specialize};

const KERNEL: &str = r#"import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[256,64]
# nkic: consts n=2
@nki.jit
def k(x, n):
    for i in range(n):
        rows = i * 128
        t = nl.ndarray((128, 64), x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[rows:rows + 128, :])
"#;

fn run(text: &str, config: &SpecializeConfig) -> (nkic_specialize::SpecializeResult, SourceMap) {
    let mut sources = SourceMap::new();
    let file = sources.add("k.py", text);
    let res = specialize(&mut sources, file, config, &NoModules);
    (res, sources)
}

#[test]
fn hover_facts_summarise_loop_iterations() {
    let config = SpecializeConfig {
        record_facts: true,
        ..SpecializeConfig::default()
    };
    let (res, _) = run(KERNEL, &config);
    assert!(!res.has_errors(), "{:?}", res.diagnostics);
    let at = |needle: &str| {
        let off = KERNEL.find(needle).unwrap() as u32;
        res.facts
            .at(nkic_diag::FileId(0), off)
            .map(|(_, f)| f.clone())
            .unwrap()
    };
    let rows = at("rows = i");
    assert_eq!(rows.values, vec!["0", "128"]);
    assert_eq!(rows.evaluations, 2);
    let n = at("n):");
    assert_eq!(n.values, vec!["2"]);
    let x = at("x.dtype");
    assert_eq!(x.values.len(), 1);
    assert_eq!(
        x.values[0],
        "[256 × 64] float32 @ shared_hbm, strides (64, 1), offset 0, allocated at k.py:9:7"
    );
    let t = at("t = nl.ndarray");
    assert!(
        t.values[0].starts_with(
            "[128(P) × 64] float32 @ sbuf, strides (64, 1), offset 0, allocated at k.py:12:13"
        ),
        "{:?}",
        t.values
    );
}

#[test]
fn facts_are_off_by_default_and_config_is_completed_from_directives() {
    let (res, _) = run(KERNEL, &SpecializeConfig::default());
    assert!(res.facts.map.is_empty());
    assert_eq!(res.kernel_name.as_deref(), Some("k"));
    assert_eq!(
        res.config.args,
        vec!["x=float32[256,64]".parse::<ArgSpec>().unwrap()]
    );
    assert_eq!(
        res.config.consts,
        vec![("n".to_owned(), ConstValue::Int(2))]
    );
    assert_eq!(res.kernels[0].ops.len(), 2);
}

#[test]
fn caller_arguments_override_directives() {
    let config = SpecializeConfig {
        args: vec![ArgSpec {
            name: "x".into(),
            dtype: DType::BF16,
            shape: vec![512, 64],
        }],
        consts: vec![("n".into(), ConstValue::Int(4))],
        ..SpecializeConfig::default()
    };
    let (res, _) = run(KERNEL, &config);
    assert!(!res.has_errors(), "{:?}", res.diagnostics);
    let k = &res.kernels[0];
    assert_eq!(k.ops.len(), 4);
    let arg = &k.storages[k.args[0].storage];
    assert_eq!((arg.dtype, arg.shape.clone()), (DType::BF16, vec![512, 64]));
}

#[test]
fn output_is_deterministic() {
    let config = SpecializeConfig::default();
    let a = nkic_ir::print(&run(KERNEL, &config).0.kernels[0]);
    let b = nkic_ir::print(&run(KERNEL, &config).0.kernels[0]);
    assert_eq!(a, b);
}

#[test]
fn modules_come_from_the_loader_and_load_once() {
    let main = "import nki\nfrom pkg.util import f\nfrom pkg import util\nimport pkg.util as u2\n\n# nkic: args x=float32[128,4]\n@nki.jit\ndef k(x):\n    print(f(2), util.f(3), u2.COUNT)\n";
    // Top-level calls and augmented assignments are host code: they do not run.
    let util = "COUNT = 1\nprint('host code')\nCOUNT += 1\n\ndef f(n):\n    return n * 10\n";
    let reads = std::sync::Mutex::new(Vec::new());
    let loader = |p: &str| {
        reads.lock().expect("not poisoned").push(p.to_owned());
        (p == "src/pkg/util.py").then(|| util.to_owned())
    };
    let mut sources = SourceMap::new();
    let file = sources.add("src/main.py", main);
    let res = specialize(&mut sources, file, &SpecializeConfig::default(), &loader);
    assert!(!res.has_errors(), "{:?}", res.diagnostics);
    let texts: Vec<&str> = res.prints.iter().map(|p| p.text.as_str()).collect();
    assert_eq!(texts, vec!["20 30 1"]);
    assert_eq!(res.prints[0].location, "src/main.py:9");
    // The module file was added to the source map once.
    assert_eq!(
        sources
            .files()
            .filter(|(_, f)| f.name() == "src/pkg/util.py")
            .count(),
        1
    );
    assert!(
        reads
            .lock()
            .expect("not poisoned")
            .iter()
            .all(|p| p.starts_with("src/"))
    );
}

/// Specializes `main` over grid `[3]` with the modules `pkg/a.py` and
/// `pkg/b.py`; returns the prints and the names of the source files in
/// id order.
fn grid_of_imports(main: &str) -> (Vec<String>, Vec<String>) {
    let loader = |p: &str| match p {
        "pkg/a.py" => Some("A = 1\n".to_owned()),
        "pkg/b.py" => Some("B = 2\n".to_owned()),
        _ => None,
    };
    let mut sources = SourceMap::new();
    let file = sources.add("k.py", main);
    let res = specialize(&mut sources, file, &SpecializeConfig::default(), &loader);
    assert!(!res.has_errors(), "{:?}", res.diagnostics);
    assert_eq!(res.kernels.len(), 3);
    let prints = res
        .prints
        .iter()
        .map(|p| format!("{} {}", p.location, p.text))
        .collect();
    let files = sources.files().map(|(_, f)| f.name().to_owned()).collect();
    (prints, files)
}

/// The instances of a grid are specialized side by side; the files they
/// import get the ids one-after-another specialization gives them, also
/// when an instance imports a module the first one did not (it is added
/// after the first one's), and when an instance imports another module
/// instead (the instances are specialized again in order).
#[test]
fn grid_instances_import_files_in_instance_order() {
    let more = "import nki\nimport nki.language as nl\n\n# nkic: args x=float32[128,4]\n# nkic: grid 3\n@nki.jit\ndef k(x):\n    from pkg import a\n    print(a.A)\n    if nl.program_id(0) == 1:\n        from pkg import b\n        print(b.B)\n    return x\n";
    let (prints, files) = grid_of_imports(more);
    assert_eq!(prints, ["k.py:9 1", "k.py:9 1", "k.py:12 2", "k.py:9 1"]);
    assert_eq!(files, ["k.py", "pkg/a.py", "pkg/b.py"]);
    let other = "import nki\nimport nki.language as nl\n\n# nkic: args x=float32[128,4]\n# nkic: grid 3\n@nki.jit\ndef k(x):\n    if nl.program_id(0) == 1:\n        from pkg import b\n        print(b.B)\n    else:\n        from pkg import a\n        print(a.A)\n    return x\n";
    let (prints, files) = grid_of_imports(other);
    assert_eq!(prints, ["k.py:13 1", "k.py:10 2", "k.py:13 1"]);
    assert_eq!(files, ["k.py", "pkg/a.py", "pkg/b.py"]);
}

#[test]
fn search_paths_are_import_roots() {
    let main = "import nki\nimport helpers\n\n# nkic: args x=float32[128,4]\n@nki.jit\ndef k(x):\n    print(helpers.N)\n";
    let loader = |p: &str| (p == "/opt/lib/helpers.py").then(|| "N = 7\n".to_owned());
    let config = SpecializeConfig {
        search_paths: vec!["/opt/lib".into()],
        ..SpecializeConfig::default()
    };
    let mut sources = SourceMap::new();
    let file = sources.add("k.py", main);
    let res = specialize(&mut sources, file, &config, &loader);
    assert!(!res.has_errors(), "{:?}", res.diagnostics);
    assert_eq!(res.prints[0].text, "7");
}

#[test]
fn loops_without_ops_are_bounded_too() {
    let text = "import nki\n\n# nkic: args x=float32[128,4]\n@nki.jit\ndef k(x):\n    n = 0\n    for i in range(1000000000):\n        n = i\n";
    let config = SpecializeConfig {
        max_iterations: 1000,
        ..SpecializeConfig::default()
    };
    let (res, _) = run(text, &config);
    let d = res.diagnostics.iter().find(|d| d.is_error()).unwrap();
    assert_eq!(d.code, nkic_specialize::codes::LOOP_LIMIT);
    let label = d.primary.as_ref().unwrap();
    assert_eq!(&text[label.span.range()], "for i in range(1000000000)");
}

#[test]
fn spmd_instances_get_their_program_ids() {
    let text = "import nki\nimport nki.language as nl\n\n# nkic: args x=float32[128,4]\n# nkic: grid 3\n@nki.jit\ndef k(x):\n    print(nl.program_id(0), nl.num_programs())\n";
    let (res, _) = run(text, &SpecializeConfig::default());
    assert!(!res.has_errors(), "{:?}", res.diagnostics);
    assert_eq!(res.kernels.len(), 3);
    let ids: Vec<Vec<u32>> = res.kernels.iter().map(|k| k.program_id.clone()).collect();
    assert_eq!(ids, vec![vec![0], vec![1], vec![2]]);
    let texts: Vec<&str> = res.prints.iter().map(|p| p.text.as_str()).collect();
    assert_eq!(texts, vec!["0 3", "1 3", "2 3"]);
}

#[test]
fn self_referential_lists_do_not_crash() {
    let text = "import nki\n\n# nkic: args x=float32[128,4]\n@nki.jit\ndef k(x):\n    l = []\n    l.append(l)\n    m = []\n    m.append(m)\n    print(l)\n    print(l < m)\n";
    let (res, _) = run(text, &SpecializeConfig::default());
    assert!(res.has_errors());
    // The text is cut at a fixed depth rather than Python's `[[...]]`.
    let t = &res.prints[0].text;
    assert!(
        t.starts_with("[[[[") && t.contains("...") && t.ends_with("]]]]"),
        "{t}"
    );
}

#[test]
fn core_barrier_needs_two_cores_under_lnc() {
    let text = "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n\n# nkic: args x=float32[256,4]\n# nkic: grid 2\n@nki.jit\ndef k(x):\n    out = nl.ndarray((256, 4), dtype=nl.float32, buffer=nl.shared_hbm)\n    nisa.core_barrier(out, (0, 1))\n    return out\n";
    let (res, _) = run(text, &SpecializeConfig::default());
    assert!(!res.has_errors(), "{:?}", res.diagnostics);
    assert_eq!(res.kernels.len(), 2);
    let one_core = SpecializeConfig {
        lnc: Some(1),
        ..SpecializeConfig::default()
    };
    let (res, _) = run(text, &one_core);
    let d = res.diagnostics.iter().find(|d| d.is_error()).unwrap();
    assert_eq!(d.code, "E0525");
    let label = d.primary.as_ref().unwrap();
    assert_eq!(&text[label.span.range()], "nisa.core_barrier(out, (0, 1))");
}

const EMBED: &str = r#"import nki
import nki.language as nl
import numpy as np


# nkic: args x=float32[2,2]
@nki.jit
def k(x):
    c = nl.shared_constant("/host/table.npy")
    assert np.load("/host/table.npy").tolist() == [[1, 2], [3, 4]]
"#;

/// A host file the caller read (`SpecializeConfig::host_files`), as the
/// Python package passes them: `nl.shared_constant` embeds it, and its
/// elements count against the value budget.
#[test]
fn host_files_are_files_of_the_compile_and_count_against_the_budget() {
    let table = nkic_specialize::HostFile {
        path: "/host/table.npy".into(),
        dtype: "int64".into(),
        shape: vec![2, 2],
        values: vec![1.0, 2.0, 3.0, 4.0],
    };
    let config = SpecializeConfig {
        host_files: vec![table],
        ..SpecializeConfig::default()
    };
    let (res, _) = run(EMBED, &config);
    assert!(!res.has_errors(), "{:?}", res.diagnostics);
    let data = res.kernels[0]
        .storages
        .iter()
        .find_map(|(_, s)| s.data.clone())
        .expect("a storage with data");
    // int64 embeds as int32 (every value fits).
    let want: Vec<u8> = [1i32, 2, 3, 4]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    assert_eq!(&*data, &want[..]);
    // 32 bytes of host file and a 4-byte string: over a 34-byte budget
    // only because the file counts.
    let small = SpecializeConfig {
        max_value_bytes: 34,
        ..config
    };
    let text = EMBED.replace(
        "    assert np.load(\"/host/table.npy\").tolist() == [[1, 2], [3, 4]]\n",
        "    s = \"ab\" + \"cd\"\n",
    );
    assert_ne!(text, EMBED);
    let (res, _) = run(&text, &small);
    let codes: Vec<&str> = res.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(codes, ["E0261"], "{:?}", res.diagnostics);
}
