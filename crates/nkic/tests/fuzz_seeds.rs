//! Runs every fuzz target's body (`fuzz/targets.rs`) on a few seed inputs,
//! among them the hostile ones of issue 17, so the targets compile and
//! hold without cargo-fuzz.

#[path = "../../../fuzz/targets.rs"]
mod targets;

const KERNEL: &str = "import nki\nimport nki.language as nl\n\n\n@nki.jit\ndef k(a):\n    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n    nl.store(out, nl.load(a))\n    return out\n";

fn nested(depth: usize) -> String {
    let mut text = String::new();
    for d in 0..depth {
        text.push_str(&" ".repeat(d));
        text.push_str("if True:\n");
    }
    text.push_str(&" ".repeat(depth));
    text.push_str("pass\n");
    text
}

#[test]
fn parse_and_kernel_seeds() {
    let bomb = KERNEL.replace(
        "    out =",
        "    s = 'x'\n    for i in range(64):\n        s = s + s\n    out =",
    );
    for seed in [
        KERNEL.to_owned(),
        nested(300),
        "(".repeat(5000),
        "$\n".repeat(100),
        bomb,
        "def f(:\n\x00\u{feff}é\r\r".to_owned(),
    ] {
        targets::parse(seed.as_bytes());
        targets::kernel(seed.as_bytes());
    }
    targets::parse(b"x = 1\n\xff\xfe\n");
    targets::kernel(b"x = 1\n\xff\xfe\n");
}

#[test]
fn npy_seeds() {
    let mut braces = b"\x93NUMPY\x01\x00\x10\x00".to_vec();
    braces.extend(b"{".repeat(16));
    let mut good = b"\x93NUMPY\x01\x00".to_vec();
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
    good.extend((header.len() as u16).to_le_bytes());
    good.extend(header.as_bytes());
    good.extend([0u8; 16]);
    for seed in [
        braces,
        b"\x93NUMPY\x02\x00\xff\xff\xff\xff{".to_vec(),
        good,
        Vec::new(),
    ] {
        targets::npy(&seed);
    }
}

#[test]
fn nkasm_seeds() {
    for seed in [
        ".target trn3\n.arg o i32[1] output\n\n.queue sync\nL0:\n  jump target=L0\n",
        ".target trn3\n.arg o i32[1] output\n.arg o i32[1] output\n",
        ".target trn3\n.queue sync\n.queue sync\n",
        ".queue dma99\n  nop\n",
        "jump target=L9\n\u{0}",
    ] {
        targets::nkasm(seed.as_bytes());
    }
}

#[test]
fn lsp_frame_seeds() {
    for seed in [
        &b"Content-Length: 1099511627776\r\n\r\n{}"[..],
        b"Content-Length: 2\r\n\r\n{}",
        b"Content-Length: 5\r\n\r\n{\"a\":",
        &[b'X'; 5000][..],
        b"\r\n\r\n",
    ] {
        targets::lsp_frames(seed);
    }
}

#[test]
fn manifest_seeds() {
    for seed in [
        &b"[\"k.py\"]\nargs = [\"a=float32[128,,64]\"]\n"[..],
        b"[\"k.py\"]\nargs = [\"a=float32[,128]\"]\ngrid = [0]\n",
        b"[[[[[[[[",
        b"[\"k.py\"]\nargs = [\"a=\xff\"]\n",
    ] {
        targets::manifest(seed);
    }
}
