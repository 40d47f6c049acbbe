//! Parser tests: grammar coverage, precedence, literals, f-strings, host-code
//! marking, error messages and recovery. Whole-file goldens live in the
//! workspace `tests/` crate; these pin individual behaviours.

use crate::ast::*;
use crate::{check_structure, parse, parse_expression, unparse};

/// Parses `src`, asserts it is clean and structurally valid, checks the
/// unparse round trip, and returns the module.
fn check_ok(src: &str) -> Module {
    let (module, diags) = parse(src);
    let messages: Vec<&str> = diags.iter().map(|d| d.message.as_str()).collect();
    assert!(
        diags.is_empty(),
        "unexpected diagnostics for {src:?}: {messages:?}"
    );
    if let Err(msg) = check_structure(&module) {
        panic!("structure check failed for {src:?}: {msg}");
    }
    let printed = unparse(&module);
    let (again, diags) = parse(&printed);
    assert!(diags.is_empty(), "unparsed text does not parse:\n{printed}");
    assert_eq!(
        again.without_spans(),
        module.without_spans(),
        "round trip differs:\n{printed}"
    );
    module
}

/// The codes and 1-based lines of the diagnostics of `src`.
fn errors(src: &str) -> Vec<(&'static str, usize, String)> {
    let (module, diags) = parse(src);
    if let Err(msg) = check_structure(&module) {
        panic!("structure check failed for {src:?}: {msg}");
    }
    diags
        .iter()
        .map(|d| {
            let start = d.primary.as_ref().map_or(0, |l| l.span.start as usize);
            let line = src[..start.min(src.len())].matches('\n').count() + 1;
            (d.code, line, d.message.clone())
        })
        .collect()
}

/// A fully parenthesised rendering of an expression, for precedence tests.
fn sexp(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Name(n) => n.to_string(),
        ExprKind::Int(v) => v.to_string(),
        ExprKind::Float(v) => format!("{v:?}"),
        ExprKind::Str(s) => format!("{s:?}"),
        ExprKind::None => "None".to_string(),
        ExprKind::Ellipsis => "...".to_string(),
        ExprKind::Bool(b) => b.to_string(),
        ExprKind::BinOp { left, op, right } => {
            format!("({} {} {})", op.as_str(), sexp(left), sexp(right))
        }
        ExprKind::UnaryOp { op, operand } => format!("({} {})", op.as_str(), sexp(operand)),
        ExprKind::BoolOp { op, values } => {
            let parts: Vec<String> = values.iter().map(sexp).collect();
            format!("({} {})", op.as_str(), parts.join(" "))
        }
        ExprKind::Compare { left, comparisons } => {
            let mut s = format!("(cmp {}", sexp(left));
            for (op, e) in comparisons {
                s.push_str(&format!(" {} {}", op.as_str(), sexp(e)));
            }
            s + ")"
        }
        ExprKind::IfExp { test, body, orelse } => {
            format!("(if {} {} {})", sexp(test), sexp(body), sexp(orelse))
        }
        ExprKind::Lambda { params, body } => {
            let names: Vec<&str> = params.args.iter().map(|p| p.name.name.as_str()).collect();
            format!("(lambda [{}] {})", names.join(" "), sexp(body))
        }
        ExprKind::NamedExpr { target, value } => format!("(:= {} {})", sexp(target), sexp(value)),
        ExprKind::Await(v) => format!("(await {})", sexp(v)),
        ExprKind::Starred(v) => format!("(* {})", sexp(v)),
        ExprKind::Attribute { value, attr } => format!("(. {} {})", sexp(value), attr.name),
        ExprKind::Subscript { value, index } => format!("([] {} {})", sexp(value), sexp(index)),
        ExprKind::Slice { lower, upper, step } => {
            let part = |p: &Option<Box<Expr>>| p.as_deref().map_or("_".to_string(), sexp);
            format!("(slice {} {} {})", part(lower), part(upper), part(step))
        }
        ExprKind::Tuple(elts) => {
            let parts: Vec<String> = elts.iter().map(sexp).collect();
            format!("(tuple {})", parts.join(" "))
        }
        ExprKind::List(elts) => {
            let parts: Vec<String> = elts.iter().map(sexp).collect();
            format!("(list {})", parts.join(" "))
        }
        ExprKind::Call { func, args } => {
            let parts: Vec<String> = args
                .iter()
                .map(|a| match &a.kind {
                    ArgKind::Positional(e) => sexp(e),
                    ArgKind::Star(e) => format!("*{}", sexp(e)),
                    ArgKind::Keyword(n, e) => format!("{}={}", n.name, sexp(e)),
                    ArgKind::DoubleStar(e) => format!("**{}", sexp(e)),
                })
                .collect();
            format!("(call {} {})", sexp(func), parts.join(" "))
        }
        other => format!("<{other:?}>"),
    }
}

fn expr(src: &str) -> String {
    let (e, diags) = parse_expression(src);
    assert!(
        diags.is_empty(),
        "diagnostics for {src:?}: {:?}",
        diags.iter().map(|d| &d.message).collect::<Vec<_>>()
    );
    sexp(&e)
}

/// Asserts that each `(source, rendering)` expression parses to that
/// `sexp` rendering.
#[track_caller]
fn check_exprs(cases: &[(&str, &str)]) {
    for &(src, want) in cases {
        assert_eq!(expr(src), want, "{src}");
    }
}

#[test]
fn precedence_of_operators() {
    check_exprs(&[
        ("-x ** 2", "(- (** x 2))"),
        ("2 ** -1", "(** 2 (- 1))"),
        ("a ** b ** c", "(** a (** b c))"),
        ("a - b - c", "(- (- a b) c)"),
        ("a + b * c @ d // e", "(+ a (// (@ (* b c) d) e))"),
        ("a | b ^ c & d << e + f", "(| a (^ b (& c (<< d (+ e f)))))"),
        ("~a + b", "(+ (~ a) b)"),
        ("not a == b", "(not (cmp a == b))"),
        ("a or b and not c", "(or a (and b (not c)))"),
        ("a and b and c", "(and a b c)"),
        ("0 <= i < n != m", "(cmp 0 <= i < n != m)"),
        (
            "a not in b is not c in d is e",
            "(cmp a not in b is not c in d is e)",
        ),
        ("a if b else c if d else e", "(if b a (if d c e))"),
        ("lambda x, y: x if y else 0", "(lambda [x y] (if y x 0))"),
        ("(y := f(x))", "(:= y (call f x))"),
        ("await a.b(c)", "(await (call (. a b) c))"),
        ("a, *b", "(tuple a (* b))"),
    ]);
}

#[test]
fn trailers_and_subscripts() {
    check_exprs(&[
        (
            "nl.load(a[i, 0:n])",
            "(call (. nl load) ([] a (tuple i (slice 0 n _))))",
        ),
        ("x[::2]", "([] x (slice _ _ 2))"),
        (
            "x[1:2:3, ..., None]",
            "([] x (tuple (slice 1 2 3) ... None))",
        ),
        ("x[:, None]", "([] x (tuple (slice _ _ _) None))"),
        ("x[*idx]", "([] x (* idx))"),
        ("f(a, *b, c=1, **d)", "(call f a *b c=1 **d)"),
        ("f(x)(y)[0].z", "(. ([] (call (call f x) y) 0) z)"),
        ("list[int] | None", "(| ([] list int) None)"),
    ]);
}

#[test]
fn numbers() {
    assert_eq!(
        expr("0x_ff + 0o17 + 0b1_0 + 1_000"),
        "(+ (+ (+ 255 15) 2) 1000)"
    );
    assert_eq!(
        expr("1. + .5 + 1e3 + 2.5E-1"),
        "(+ (+ (+ 1.0 0.5) 1000.0) 0.25)"
    );
    let (e, _) = parse_expression("3j");
    assert_eq!(e.kind, ExprKind::Imaginary(3.0));
    assert_eq!(errors("x = 0777\n")[0].0, "E0006");
}

#[test]
fn strings_decode_and_concatenate() {
    let (e, d) = parse_expression(r#"'a\tb' "c\x41\u00e9" r'\n' U"x""#);
    assert!(d.is_empty());
    assert_eq!(e.kind, ExprKind::Str("a\tbcA\u{e9}\\nx".to_string()));
    let (e, _) = parse_expression("b'\\x00A' Rb'\\x'");
    assert_eq!(e.kind, ExprKind::Bytes(b"\x00A\\x".to_vec()));
    let (e, _) = parse_expression("'''a\n\"b\"\n'''");
    assert_eq!(e.kind, ExprKind::Str("a\n\"b\"\n".to_string()));
    let (e, _) = parse_expression("'line \\\ncontinued'");
    assert_eq!(e.kind, ExprKind::Str("line continued".to_string()));
    assert_eq!(errors("x = b'a' 'b'\n")[0].0, "E0008");
}

#[test]
fn fstrings_have_fields_conversions_and_specs() {
    let (e, d) = parse_expression(r#"f"n={n!r:>{width}.3f} {x['k']} {{lit}} {y=}" 'tail'"#);
    assert!(
        d.is_empty(),
        "{:?}",
        d.iter().map(|d| &d.message).collect::<Vec<_>>()
    );
    let ExprKind::FString(parts) = &e.kind else {
        panic!("expected an f-string, got {:?}", e.kind)
    };
    assert_eq!(parts[0], FStringPart::Literal("n=".to_string()));
    let FStringPart::Field(f) = &parts[1] else {
        panic!("expected a field")
    };
    assert_eq!(sexp(&f.value), "n");
    assert_eq!(f.conversion, Some('r'));
    let spec = f.format_spec.as_deref().unwrap_or_default();
    assert_eq!(spec.len(), 3);
    assert!(matches!(&spec[0], FStringPart::Literal(s) if s == ">"));
    assert!(matches!(&spec[1], FStringPart::Field(w) if sexp(&w.value) == "width"));
    assert!(matches!(&spec[2], FStringPart::Literal(s) if s == ".3f"));
    let FStringPart::Field(f) = &parts[3] else {
        panic!("expected a field")
    };
    assert_eq!(sexp(&f.value), "([] x \"k\")");
    assert_eq!(parts[4], FStringPart::Literal(" {lit} ".to_string()));
    let FStringPart::Field(f) = &parts[5] else {
        panic!("expected a field")
    };
    assert_eq!(f.debug_text.as_deref(), Some("y="));
    assert_eq!(parts[6], FStringPart::Literal("tail".to_string()));
    // Spans of field expressions point into the file.
    let src = "s = f'{a + b}'\n";
    let module = check_ok(src);
    let StmtKind::Assign { value, .. } = &module.body[0].kind else {
        panic!("expected an assignment")
    };
    let ExprKind::FString(parts) = &value.kind else {
        panic!("expected an f-string")
    };
    let FStringPart::Field(f) = &parts[0] else {
        panic!("expected a field")
    };
    assert_eq!(&src[f.value.span.range()], "a + b");
    // Nested f-strings and same-quote nesting (Python 3.12).
    check_ok("x = f\"{f'{a}'} {d[\"k\"]:{w}}\"\n");
    check_ok("x = rf'\\d{n}' fR\"{a!s}\" F'''{\n  b\n}'''\n");
}

#[test]
fn fstring_errors_are_reported_in_place() {
    let src = "x = f'{a +}'\ny = f'{}'\n";
    let errs = errors(src);
    assert_eq!(
        errs.iter().map(|e| (e.0, e.1)).collect::<Vec<_>>(),
        [("E0010", 1), ("E0014", 2)]
    );
}

#[test]
fn statements_cover_the_grammar() {
    check_ok(
        "\"\"\"Module doc.\"\"\"\n\
         import numpy as np, os.path\n\
         from . import a\n\
         from ..pkg.mod import (x as y, z,)\n\
         from m import *\n\
         @nki.jit(mode='simulation')\n\
         @staticmethod\n\
         def kernel(a, b: int = 2, /, c=3, *args: int, d, e: 'T' = 4, **kw) -> list[int] | None:\n\
         \x20   global g\n\
         \x20   x = y = z = 0\n\
         \x20   a, *b = c\n\
         \x20   [p, (q, r)] = s\n\
         \x20   t.u[v] += 1; w: float = 2.0; w2: int\n\
         \x20   del a[0], b.c\n\
         \x20   assert x > 0, f'bad {x}'\n\
         \x20   for i, (j, k) in enumerate(zip(a, b)):\n\
         \x20       if i: continue\n\
         \x20       elif j:\n\
         \x20           break\n\
         \x20       else:\n\
         \x20           pass\n\
         \x20   else:\n\
         \x20       pass\n\
         \x20   while n := f():\n\
         \x20       n -= 1\n\
         \x20   else:\n\
         \x20       return\n\
         \x20   with open(p) as fh, lock:\n\
         \x20       data = fh.read()\n\
         \x20   try:\n\
         \x20       raise ValueError('x') from None\n\
         \x20   except (KeyError, ValueError) as err:\n\
         \x20       raise\n\
         \x20   except Exception:\n\
         \x20       pass\n\
         \x20   else:\n\
         \x20       pass\n\
         \x20   finally:\n\
         \x20       pass\n\
         \x20   def inner():\n\
         \x20       nonlocal x\n\
         \x20       yield x\n\
         \x20       y = yield\n\
         \x20       yield from range(3)\n\
         \x20   return a, b\n\
         class A(Base, metaclass=Meta):\n\
         \x20   x: int = 0\n\
         \x20   def m(self): return [i * 2 for i in range(10) if i % 2 if i > 3]\n\
         async def co():\n\
         \x20   await x\n\
         \x20   async for a in b: pass\n\
         \x20   async with c as d: pass\n\
         d = {k: v for k, v in items}, {1, 2}, {**a, 'b': 1}, {s for s in t}, (g for g in h)\n\
         e = [*a, *b], lambda *a, **k: 0, lambda: (yield), print(*x, sep='', end='')\n\
         f = x if y else z; g = not a; h = a[1:2, ::3, ...]\n",
    );
}

#[test]
fn host_code_is_marked() {
    let src = "\"\"\"doc\"\"\"\n\
               import numpy as np\n\
               P = 128\n\
               SHAPE = (P, 512)\n\
               DT = nl.bfloat16\n\
               X = np.zeros(SHAPE)\n\
               def k(a):\n\
               \x20   return a\n\
               print('hello')\n\
               if __name__ == \"__main__\":\n\
               \x20   k(X)\n";
    let module = check_ok(src);
    assert_eq!(module.host_code, [5, 7, 8]);
    assert!(module.is_host_code(8));
    assert!(!module.is_host_code(6));
    assert_eq!(module.kernel_items().count(), 6);
}

#[test]
fn every_independent_error_is_reported() {
    let src = "x = \n\
               def f(:\n\
               \x20   return 1\n\
               y = (1 +)\n\
               if z\n\
               \x20   pass\n\
               w = 3 $ 4\n\
               v = [1, 2\n";
    let errs = errors(src);
    let found: Vec<(&str, usize)> = errs.iter().map(|e| (e.0, e.1)).collect();
    assert_eq!(
        found,
        [
            ("E0010", 1),
            ("E0010", 2),
            ("E0004", 2),
            ("E0010", 4),
            ("E0010", 5),
            ("E0001", 7),
            ("E0004", 8)
        ],
        "{errs:?}"
    );
    assert_eq!(errs[0].2, "expected an expression after `=`");
    assert_eq!(errs[2].2, "unclosed `(`");
    assert_eq!(errs[3].2, "expected an expression after `+`");
    assert_eq!(errs[4].2, "expected `:` after the `if` condition");
}

#[test]
fn messages_never_show_grammar_terminal_names() {
    let inputs = [
        "x = \n",
        "def f(:\n",
        "import\n",
        "from . import\n",
        "class A\n",
        "for x in y z:\n",
        "f(a b)\n",
        "x = [1,, 2]\n",
        "if x:\ny\n",
        "else:\n  pass\n",
        "lambda: = 1\n",
        "a.1\n",
        "x = )\n",
        "@\ndef f(): pass\n",
        "with a as:\n  pass\n",
        "try:\n  pass\n",
        "return return\n",
        "def f():\n",
    ];
    for src in inputs {
        let (_, diags) = parse(src);
        assert!(!diags.is_empty(), "no diagnostic for {src:?}");
        for d in diags {
            for bad in [
                "\"name\"",
                "\"newline\"",
                "\"indent\"",
                "\"dedent\"",
                "Token",
                "\"end marker\"",
                "\\\"",
            ] {
                assert!(
                    !d.message.contains(bad),
                    "{src:?}: message {:?} shows {bad}",
                    d.message
                );
                let label = d.primary.as_ref().map_or("", |l| l.message.as_str());
                assert!(!label.contains(bad), "{src:?}: label {label:?} shows {bad}");
            }
            assert!(d.primary.is_some(), "{src:?}: diagnostic without a span");
            assert!(
                !d.message.ends_with('.'),
                "{src:?}: message ends with a period"
            );
            let first = d.message.chars().next().unwrap_or('a');
            assert!(
                !first.is_uppercase(),
                "{src:?}: message starts uppercase: {}",
                d.message
            );
        }
    }
}

#[test]
fn error_recovery_keeps_following_statements() {
    let (module, diags) = parse("x = = 1\ny = 2\nif a\n    b = 3\nz = 4\n");
    assert_eq!(diags.len(), 2);
    let kinds: Vec<&str> = module
        .body
        .iter()
        .map(|s| match &s.kind {
            StmtKind::Error(_) => "error",
            StmtKind::Assign { .. } => "assign",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["error", "assign", "error", "error", "assign"]);
    // The block after the broken `if` header is parsed, not dropped.
    let StmtKind::Error(body) = &module.body[3].kind else {
        panic!("expected an error statement")
    };
    assert_eq!(body.len(), 1);
}

#[test]
fn assignment_targets_are_checked() {
    let errs = errors(
        "f() = 1\n(a, b) += 1\nfor 1 in x: pass\n[x for 2 in y]\nwith a as b(): pass\n(a.b := 1)\n",
    );
    let codes: Vec<(&str, usize)> = errs.iter().map(|e| (e.0, e.1)).collect();
    assert_eq!(
        codes,
        [
            ("E0020", 1),
            ("E0020", 2),
            ("E0020", 3),
            ("E0020", 4),
            ("E0020", 5),
            ("E0020", 6)
        ]
    );
    assert_eq!(errs[0].2, "cannot assign to a function call");
}

#[test]
fn parameter_and_argument_order_is_checked() {
    let errs =
        errors("def f(a=1, b): pass\ndef g(**k, a): pass\nf(a=1, 2)\nf(**a, *b)\nf(a.b=1)\n");
    let codes: Vec<&str> = errs.iter().map(|e| e.0).collect();
    assert_eq!(codes, ["E0015", "E0015", "E0016", "E0016", "E0017"]);
}

#[test]
fn windows_line_ends_and_tabs_parse() {
    let module = check_ok("def f(a):\r\n\tif a:\r\n\t\treturn 1\r\n\treturn 2\r\n");
    assert_eq!(module.body.len(), 1);
}

#[test]
fn empty_and_trivia_only_files() {
    assert!(check_ok("").body.is_empty());
    assert!(check_ok("\n\n# only a comment\n   \n").body.is_empty());
}

#[test]
fn deeply_nested_input_does_not_overflow() {
    let src = format!("x = {}1{}\n", "(".repeat(300), ")".repeat(300));
    let errs = errors(&src);
    assert_eq!(errs[0].0, "E0011");
    // Every kind of unbounded nesting is cut off with one diagnostic, and
    // the rest of the file is still parsed.
    for deep in [
        format!("x = {}1", "1 + ".repeat(100_000)),
        format!("x = {}1", "-".repeat(100_000)),
        format!("x = {}b", "a.".repeat(100_000)),
        format!("x = {}b", "not ".repeat(100_000)),
        format!("x = {}1", "lambda: ".repeat(100_000)),
        format!("x = f{}", "()".repeat(50_000)),
        format!("if a:\n    pass\n{}", "elif b:\n    pass\n".repeat(5_000)),
    ] {
        let src = format!("{deep}\ny = 2\n");
        let errs = errors(&src);
        assert_eq!(
            errs.iter().map(|e| e.0).collect::<Vec<_>>(),
            ["E0018"],
            "{}",
            &src[..40]
        );
        let (module, _) = parse(&src);
        assert!(matches!(
            module.body.last().map(|s| &s.kind),
            Some(StmtKind::Assign { .. })
        ));
        let _ = unparse(&module);
    }
    // Brackets never closed, past the limit: the skipped ones get no
    // closer at the end of the file or of the statement.
    for src in [
        "(".repeat(5000),
        format!("x = {}\ny = 2\n", "[".repeat(300)),
    ] {
        let (tokens, _) = crate::lex(&src);
        assert_eq!(crate::layout::check_tokens(&src, &tokens), Ok(()));
        assert_eq!(errors(&src)[0].0, "E0011");
    }
    // Long flat expressions are fine.
    let src = format!("x = [{}]\n", "-1, ".repeat(20_000));
    check_ok(&src);
}

#[test]
fn helps_point_at_the_likely_fix() {
    let help = |src: &str| {
        let (_, diags) = parse(src);
        assert_eq!(
            diags.len(),
            1,
            "{src:?}: {:?}",
            diags.iter().map(|d| &d.message).collect::<Vec<_>>()
        );
        diags[0].help.first().cloned().unwrap_or_default()
    };
    assert_eq!(help("if x = 1:\n    pass\n"), "use `==` to compare");
    assert_eq!(
        help("if a:\n    pass\nelse if b:\n    pass\n"),
        "use `elif` for another condition"
    );
    assert_eq!(
        help("if a && b:\n    pass\n"),
        "use `and` for a logical and"
    );
    assert_eq!(
        help("f(shape nl.float32)\n"),
        "is a `,` missing before this?"
    );
    assert_eq!(help("print \"x\"\n"), "write `print(...)`");
    assert_eq!(
        help("x := 1\n"),
        "`:=` assigns only inside an expression, in parentheses"
    );
    assert_eq!(
        help("class = 1\n"),
        "`class` is a Python keyword and cannot be used as a name"
    );
}

#[test]
fn parenthesised_context_managers() {
    let module = check_ok(
        "with (open(a) as f, lock, g() as (x, y)):\n    pass\nwith (a, b):\n    pass\nwith (a, b) as c:\n    pass\n",
    );
    let counts: Vec<(usize, usize)> = module
        .body
        .iter()
        .map(|s| match &s.kind {
            StmtKind::With { items, .. } => (
                items.len(),
                items.iter().filter(|i| i.target.is_some()).count(),
            ),
            _ => (0, 0),
        })
        .collect();
    assert_eq!(counts, [(3, 2), (2, 0), (1, 1)]);
    let module = check_ok("with ((a, b)):\n    pass\n");
    assert!(matches!(&module.body[0].kind, StmtKind::With { items, .. } if items.len() == 1));
    let errs = errors("x = (a as b)\nprint((c as d), 1)\n");
    assert_eq!(
        errs.iter().map(|e| (e.0, e.1)).collect::<Vec<_>>(),
        [("E0010", 1), ("E0010", 2)]
    );
    assert_eq!(errs[0].2, "`as` is not allowed here");
}

#[test]
fn repeated_names_are_reported() {
    let errs = errors("f(dst=a, src=b, dst=c)\ndef g(x, y, x): pass\nh = lambda a, a: 0\n");
    let found: Vec<(&str, usize, &str)> = errs.iter().map(|e| (e.0, e.1, e.2.as_str())).collect();
    assert_eq!(
        found,
        [
            ("E0016", 1, "keyword argument `dst` is repeated"),
            ("E0015", 2, "duplicate parameter `x`"),
            ("E0015", 3, "duplicate parameter `a`")
        ]
    );
}

#[test]
fn lexical_mistakes_get_one_precise_diagnostic() {
    let cases = [
        ("x = 0xZZ\n", "E0006", "invalid hexadecimal literal `0xZZ`"),
        ("x = 1_000_\n", "E0006", "invalid decimal literal `1_000_`"),
        (
            "x = 1 + \\ 2\n",
            "E0001",
            "`\\` must be the last character of its line",
        ),
        ("$count = 0\n", "E0001", "invalid character `$`"),
        (
            "t = x[0:128, (1, 2]]\n",
            "E0005",
            "`]` does not match the open `(`",
        ),
        (
            "print \"shape:\", x\n",
            "E0010",
            "missing parentheses in call to `print`",
        ),
    ];
    for (src, code, message) in cases {
        let errs = errors(src);
        assert_eq!(errs.len(), 1, "{src:?}: {errs:?}");
        assert_eq!((errs[0].0, errs[0].2.as_str()), (code, message), "{src:?}");
    }
}

#[test]
fn unclosed_bracket_is_reported_once_before_the_next_statement() {
    let src = "def f(x):\n    t = nl.ndarray((1, 2), buffer=nl.sbuf\n    nisa.dma_copy(dst=t, src=x)\n    head = x[0:128, :\n    tail = x[128:, :]\n    return head\n";
    let errs = errors(src);
    let found: Vec<(&str, usize)> = errs.iter().map(|e| (e.0, e.1)).collect();
    assert_eq!(found, [("E0004", 2), ("E0004", 4)], "{errs:?}");
}

#[test]
fn unparse_keeps_parentheses_where_needed() {
    for src in [
        "del (a, b)\n",
        "def f():\n    return (y := 1)\n",
        "for x in (y := z):\n    pass\n",
        "def g():\n    print((yield))\n    return (yield x)\n",
        "x = (yield)\n",
        "a = [(b := 1), -(2 ** -3), (-2) ** 2, not (a and b), (lambda: 0)()]\n",
        "print(f\"{x!r:>{w}} {'q'} {{}}\")\n",
    ] {
        let module = check_ok(src);
        assert!(!unparse(&module).contains("(((yield)))"));
    }
}

/// The one diagnostic of `src`, which must have `code`.
#[track_caller]
fn only_error(src: &str, code: &str) -> nkic_diag::Diagnostic {
    let (_, mut diags) = crate::parse(src);
    assert_eq!(diags.len(), 1, "{src:?}: {diags:?}");
    assert_eq!(diags[0].code, code);
    diags.remove(0)
}

#[test]
fn backslash_before_non_ascii_in_bytes_is_one_error_not_a_panic() {
    for src in [
        "x = rb\"\\é\"\n",
        "x = b\"\\é\"\n",
        "x = b'a\\\u{1F600}b'\n",
    ] {
        let diag = only_error(src, "E0007");
        let span = diag.primary.as_ref().unwrap().span;
        assert!(
            src.is_char_boundary(span.start as usize) && src.is_char_boundary(span.end as usize)
        );
    }
}

#[test]
fn a_leading_byte_order_mark_is_ignored() {
    let src = "\u{feff}import nki\n\ndef f(a):\n    return a\n";
    let (module, diags) = crate::parse(src);
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(module.body.len(), 2);
    let (_, diags) = crate::parse("x = 1\n\u{feff}y = 2\n");
    assert_eq!(
        diags.len(),
        1,
        "a byte-order mark elsewhere is an invalid character"
    );
}

#[test]
fn a_bare_star_needs_keyword_only_parameters() {
    for src in [
        "def f(a, *):\n    pass\n",
        "def f(*, **kw):\n    pass\n",
        "g = lambda *: 0\n",
    ] {
        only_error(src, "E0015");
    }
    let (_, diags) = crate::parse("def f(a, *, b):\n    pass\n");
    assert!(diags.is_empty(), "{diags:?}");
}

/// The hand-written expression parser recurses a few times per nesting
/// level; the layout pass and the parser's own depth limit bound the levels,
/// so even the deepest input parses on a small stack.
#[test]
fn deepest_nesting_parses_on_a_small_stack() {
    let mut src = String::new();
    for (open, close) in [("(", ")"), ("[", "]"), ("f(", ")"), ("{", "}")] {
        src.push_str(&format!("x = {}1{}\n", open.repeat(999), close.repeat(999)));
    }
    for prefix in [
        "-",
        "not ",
        "2 ** ",
        "lambda: ",
        "1 if 2 else ",
        "lambda a, b: ",
    ] {
        src.push_str(&format!("y = {}1\n", prefix.repeat(990)));
    }
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let (module, diags) = crate::parse(&src);
            let codes: Vec<&str> = diags.iter().map(|d| d.code).collect();
            (module.body.len(), codes)
        })
        .expect("spawn a parser thread");
    let (stmts, codes) = handle
        .join()
        .expect("the parser does not overflow its stack");
    assert_eq!(stmts, 10);
    // One report for the brackets (per file) and one for the parser's depth
    // limit (per file); nothing else.
    assert_eq!(codes, ["E0011", "E0018"], "{codes:?}");
}

/// Blocks nested deeper than the layout pass allows are reported once, at
/// the line that opens the first level too many, and their lines are
/// dropped: the parse stays shallow and continues with the next line at an
/// outer level.
#[test]
fn too_deep_blocks_are_reported_and_dropped() {
    let mut src = String::from("def f():\n");
    for depth in 1..=6000 {
        src.push_str(&" ".repeat(depth));
        src.push_str("for i in range(1):\n");
    }
    src.push_str(&" ".repeat(6001));
    src.push_str("pass\n");
    src.push_str("x = (1,\n  2)\n");
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let (module, diags) = crate::parse(&src);
            let found: Vec<(&str, u32)> = diags
                .iter()
                .map(|d| (d.code, d.primary.as_ref().map_or(0, |l| l.span.start)))
                .collect();
            (module.body.len(), found)
        })
        .expect("spawn a parser thread");
    let (stmts, found) = handle.join().expect("no stack overflow");
    assert_eq!(stmts, 2);
    // The 100th `for` opens the 101st level: its line starts after the
    // `def` line and 99 `for` lines indented 1..=99.
    let line_start = 9 + (1..=99).map(|d| d + 19).sum::<u32>();
    assert_eq!(found, [("E0021", line_start)], "{found:?}");
}
