//! The token type of the NKI kernel language and its raw (logos) lexer.
//!
//! The lexer here is *physical*: it produces every token of the Python
//! subset, plus a raw [`Token::Newline`] at every line end, and skips
//! horizontal whitespace, comments and explicit (`\`) line joins.
//! [`crate::layout`] turns that stream into the logical one the grammar reads
//! (NEWLINE / INDENT / DEDENT, no newlines inside brackets).
//!
//! Payload-carrying tokens borrow their text from the source. Numbers and
//! strings are converted later (in `literal.rs` and `fstring.rs`), where a bad
//! literal can get a good diagnostic with a precise span.
//!
//! Every string literal (plain, bytes, raw, f-string, triple-quoted, with any
//! prefix in any case) is one [`Token::String`] whose text includes prefix and
//! quotes. Its end is found by a callback that knows about escapes, triple
//! quotes and f-string replacement fields, so the newlines inside a string are
//! never seen by the layout pass.

use logos::{Lexer, Logos};
use std::fmt;

/// Why the raw lexer could not produce a token.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LexError {
    /// A character that starts no token.
    #[default]
    InvalidCharacter,
    /// A string whose closing quote is missing.
    UnterminatedString,
    /// A triple-quoted string whose closing quotes are missing.
    UnterminatedTripleString,
    /// A name containing a non-ASCII character that is not a letter or digit.
    InvalidNameCharacter,
    /// A number immediately followed by letters, digits or `_` that do not
    /// form a valid literal (`0xZZ`, `1_000_`, `3d`).
    InvalidNumber,
    /// An f-string whose replacement field starting at this byte offset
    /// (relative to the token) is never closed.
    UnclosedFStringField(u32),
}

/// One token. `'src` is the source text the payloads borrow from.
#[derive(Logos, Clone, Copy, Debug, PartialEq, Eq)]
#[logos(error = LexError)]
// The digits of a decimal literal, and a float: `1.`, `.5`, `1e-3`, `1_0.2_5`.
#[logos(subpattern digits = r"[0-9](_?[0-9])*")]
#[logos(subpattern exponent = r"[eE][+-]?(?&digits)")]
#[logos(subpattern float = r"(?&digits)\.(?&digits)?(?&exponent)?|\.(?&digits)(?&exponent)?|(?&digits)(?&exponent)")]
#[logos(skip r"[ \t\x0C]+")]
#[logos(skip("\u{FEFF}", priority = 10))]
#[logos(skip(r"#[^\r\n]*", allow_greedy = true))]
#[logos(skip r"\\(\r\n|\r|\n)")]
pub enum Token<'src> {
    // ----- produced by the layout pass and the parser glue only -----
    /// The start of a more deeply indented block.
    Indent,
    /// The end of an indented block.
    Dedent,
    /// A token the lexer could not make sense of (its diagnostic is recorded).
    Error,
    /// Selects the module entry point of the grammar (parser glue only).
    StartModule,
    /// Selects the expression entry point of the grammar (parser glue only).
    StartExpression,
    /// The end of the token stream (parser glue only).
    EndMarker,

    // ----- line structure -----
    /// A physical line end; after layout, the end of a logical line.
    #[regex(r"\r\n|\r|\n")]
    Newline,

    // ----- names, numbers, strings -----
    /// An identifier (keywords are separate tokens).
    #[regex(r"[A-Za-z_\u{80}-\u{10FFFF}][A-Za-z0-9_\u{80}-\u{10FFFF}]*", name)]
    Name(&'src str),
    /// An integer literal as written (`0x_ff`, `1_000`, `0o17`, `0b1`).
    #[regex(r"(?&digits)", priority = 10)]
    #[regex(r"0[xX](_?[0-9a-fA-F])+", priority = 10)]
    #[regex(r"0[oO](_?[0-7])+", priority = 10)]
    #[regex(r"0[bB](_?[01])+", priority = 10)]
    // A digit run glued to letters or `_` that no valid pattern covers as a
    // whole (longest match wins, and valid patterns win ties) is one bad
    // literal rather than a number followed by a name.
    #[regex(r"[0-9][0-9A-Za-z_]*", invalid_number, priority = 1)]
    Int(&'src str),
    /// A floating-point literal as written (`1.`, `.5`, `1e-3`, `1_0.2_5`).
    #[regex(r"(?&float)", priority = 10)]
    Float(&'src str),
    /// An imaginary literal as written (`2j`, `1.5e3J`).
    #[regex(r"((?&digits)|(?&float))[jJ]", priority = 10)]
    Imaginary(&'src str),
    /// A string, bytes or f-string literal including prefix and quotes.
    #[regex(r#"([rRbBuUfF]|[rR][bBfF]|[bBfF][rR])?['"]"#, string)]
    String(&'src str),

    // ----- keywords -----
    #[token("False")]
    False,
    #[token("None")]
    None,
    #[token("True")]
    True,
    #[token("and")]
    And,
    #[token("as")]
    As,
    #[token("assert")]
    Assert,
    #[token("async")]
    Async,
    #[token("await")]
    Await,
    #[token("break")]
    Break,
    #[token("class")]
    Class,
    #[token("continue")]
    Continue,
    #[token("def")]
    Def,
    #[token("del")]
    Del,
    #[token("elif")]
    Elif,
    #[token("else")]
    Else,
    #[token("except")]
    Except,
    #[token("finally")]
    Finally,
    #[token("for")]
    For,
    #[token("from")]
    From,
    #[token("global")]
    Global,
    #[token("if")]
    If,
    #[token("import")]
    Import,
    #[token("in")]
    In,
    #[token("is")]
    Is,
    #[token("lambda")]
    Lambda,
    #[token("nonlocal")]
    Nonlocal,
    #[token("not")]
    Not,
    #[token("or")]
    Or,
    #[token("pass")]
    Pass,
    #[token("raise")]
    Raise,
    #[token("return")]
    Return,
    #[token("try")]
    Try,
    #[token("while")]
    While,
    #[token("with")]
    With,
    #[token("yield")]
    Yield,

    // ----- delimiters -----
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token(",")]
    Comma,
    #[token(":")]
    Colon,
    #[token(";")]
    Semicolon,
    #[token(".")]
    Dot,
    #[token("...")]
    Ellipsis,
    #[token("->")]
    Arrow,
    #[token(":=")]
    ColonEqual,
    #[token("=")]
    Equal,

    // ----- operators -----
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("**")]
    DoubleStar,
    #[token("/")]
    Slash,
    #[token("//")]
    DoubleSlash,
    #[token("%")]
    Percent,
    #[token("@")]
    At,
    #[token("<<")]
    LeftShift,
    #[token(">>")]
    RightShift,
    #[token("&")]
    Amper,
    #[token("|")]
    Vbar,
    #[token("^")]
    Circumflex,
    #[token("~")]
    Tilde,
    #[token("<")]
    Less,
    #[token(">")]
    Greater,
    #[token("<=")]
    LessEqual,
    #[token(">=")]
    GreaterEqual,
    #[token("==")]
    EqEqual,
    #[token("!=")]
    NotEqual,

    // ----- augmented assignment -----
    #[token("+=")]
    PlusEqual,
    #[token("-=")]
    MinusEqual,
    #[token("*=")]
    StarEqual,
    #[token("**=")]
    DoubleStarEqual,
    #[token("/=")]
    SlashEqual,
    #[token("//=")]
    DoubleSlashEqual,
    #[token("%=")]
    PercentEqual,
    #[token("@=")]
    AtEqual,
    #[token("<<=")]
    LeftShiftEqual,
    #[token(">>=")]
    RightShiftEqual,
    #[token("&=")]
    AmperEqual,
    #[token("|=")]
    VbarEqual,
    #[token("^=")]
    CircumflexEqual,
}

/// Checks the non-ASCII characters of a name.
///
/// The regex accepts any non-ASCII character so that it stays small; Python
/// allows only letters and digits (XID), approximated here with
/// `char::is_alphanumeric` plus the connector `_` handled by the regex.
fn name<'src>(lex: &mut Lexer<'src, Token<'src>>) -> Result<&'src str, LexError> {
    let text = lex.slice();
    if !text.is_ascii()
        && text
            .chars()
            .any(|c| !c.is_ascii() && !c.is_alphanumeric() && !is_combining(c))
    {
        return Err(LexError::InvalidNameCharacter);
    }
    Ok(text)
}

/// Whether `c` is a combining mark or joiner, which Python allows inside
/// names (XID_Continue) although `char::is_alphanumeric` rejects it.
fn is_combining(c: char) -> bool {
    matches!(c as u32,
        0x0300..=0x036F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF
        | 0xFE20..=0xFE2F | 0x200C | 0x200D | 0x00B7 | 0x0387 | 0x19DA)
}

/// A digit run glued to letters: always an error (see `Token::Int`).
fn invalid_number<'src>(_: &mut Lexer<'src, Token<'src>>) -> Result<&'src str, LexError> {
    Err(LexError::InvalidNumber)
}

/// Finds the end of a string literal whose prefix and opening quote have just
/// been matched, and bumps the lexer past it.
fn string<'src>(lex: &mut Lexer<'src, Token<'src>>) -> Result<&'src str, LexError> {
    let opener = lex.slice();
    let quote = opener.as_bytes()[opener.len() - 1];
    let prefix = &opener[..opener.len() - 1];
    let is_f = prefix.bytes().any(|b| b == b'f' || b == b'F');
    let rest = lex.remainder();
    let triple = rest.len() >= 2 && rest.as_bytes()[0] == quote && rest.as_bytes()[1] == quote;
    let body_start = if triple { 2 } else { 0 };
    if triple {
        lex.bump(2);
    }
    match crate::fstring::scan_body_detailed(&rest[body_start..], quote, triple, is_f) {
        Ok(len) => {
            lex.bump(len);
            Ok(lex.slice())
        }
        Err((consumed, unclosed_field)) => {
            lex.bump(consumed);
            Err(match unclosed_field {
                Some(at) => {
                    let offset = opener.len() + body_start + at;
                    LexError::UnclosedFStringField(u32::try_from(offset).unwrap_or(0))
                }
                None if triple => LexError::UnterminatedTripleString,
                None => LexError::UnterminatedString,
            })
        }
    }
}

impl Token<'_> {
    /// How the token is written in source, for dumps and messages.
    pub fn text(&self) -> &str {
        use Token::*;
        match self {
            Indent => "<indent>",
            Dedent => "<dedent>",
            Error => "<error>",
            StartModule => "<start-module>",
            StartExpression => "<start-expression>",
            EndMarker => "<end>",
            Newline => "<newline>",
            Name(s) | Int(s) | Float(s) | Imaginary(s) | String(s) => s,
            other => other.fixed_text().unwrap_or("<token>"),
        }
    }

    /// The spelling of a keyword, delimiter or operator token.
    pub fn fixed_text(&self) -> Option<&'static str> {
        use Token::*;
        Some(match self {
            False => "False",
            None => "None",
            True => "True",
            And => "and",
            As => "as",
            Assert => "assert",
            Async => "async",
            Await => "await",
            Break => "break",
            Class => "class",
            Continue => "continue",
            Def => "def",
            Del => "del",
            Elif => "elif",
            Else => "else",
            Except => "except",
            Finally => "finally",
            For => "for",
            From => "from",
            Global => "global",
            If => "if",
            Import => "import",
            In => "in",
            Is => "is",
            Lambda => "lambda",
            Nonlocal => "nonlocal",
            Not => "not",
            Or => "or",
            Pass => "pass",
            Raise => "raise",
            Return => "return",
            Try => "try",
            While => "while",
            With => "with",
            Yield => "yield",
            LParen => "(",
            RParen => ")",
            LBracket => "[",
            RBracket => "]",
            LBrace => "{",
            RBrace => "}",
            Comma => ",",
            Colon => ":",
            Semicolon => ";",
            Dot => ".",
            Ellipsis => "...",
            Arrow => "->",
            ColonEqual => ":=",
            Equal => "=",
            Plus => "+",
            Minus => "-",
            Star => "*",
            DoubleStar => "**",
            Slash => "/",
            DoubleSlash => "//",
            Percent => "%",
            At => "@",
            LeftShift => "<<",
            RightShift => ">>",
            Amper => "&",
            Vbar => "|",
            Circumflex => "^",
            Tilde => "~",
            Less => "<",
            Greater => ">",
            LessEqual => "<=",
            GreaterEqual => ">=",
            EqEqual => "==",
            NotEqual => "!=",
            PlusEqual => "+=",
            MinusEqual => "-=",
            StarEqual => "*=",
            DoubleStarEqual => "**=",
            SlashEqual => "/=",
            DoubleSlashEqual => "//=",
            PercentEqual => "%=",
            AtEqual => "@=",
            LeftShiftEqual => "<<=",
            RightShiftEqual => ">>=",
            AmperEqual => "&=",
            VbarEqual => "|=",
            CircumflexEqual => "^=",
            _ => return Option::None,
        })
    }

    /// Whether the token is a whole operand by itself: a name, a number,
    /// a string or one of the constants `True`, `False`, `None`.
    pub fn is_atom(&self) -> bool {
        matches!(
            self,
            Token::Name(_)
                | Token::Int(_)
                | Token::Float(_)
                | Token::Imaginary(_)
                | Token::String(_)
                | Token::True
                | Token::False
                | Token::None
        )
    }

    /// Whether the token can end an operand (so a following operand needs
    /// an operator or comma in between): an atom or a closing bracket.
    pub fn ends_operand(&self) -> bool {
        self.is_atom() || matches!(self, Token::RParen | Token::RBracket | Token::RBrace)
    }

    /// Whether the token is a keyword.
    pub fn is_keyword(&self) -> bool {
        self.fixed_text()
            .is_some_and(|t| t.as_bytes()[0].is_ascii_alphabetic())
    }

    /// The kind name used in token dumps (`Name`, `Int`, `Op`, `Keyword`, …).
    pub fn kind_name(&self) -> &'static str {
        use Token::*;
        match self {
            Indent => "Indent",
            Dedent => "Dedent",
            Error => "Error",
            StartModule => "StartModule",
            StartExpression => "StartExpression",
            EndMarker => "EndMarker",
            Newline => "Newline",
            Name(_) => "Name",
            Int(_) => "Int",
            Float(_) => "Float",
            Imaginary(_) => "Imaginary",
            String(_) => "String",
            t if t.is_keyword() => "Keyword",
            _ => "Op",
        }
    }

    /// The closing delimiter matching an opening one.
    pub fn closer(&self) -> Option<Token<'static>> {
        match self {
            Token::LParen => Some(Token::RParen),
            Token::LBracket => Some(Token::RBracket),
            Token::LBrace => Some(Token::RBrace),
            _ => Option::None,
        }
    }
}

impl fmt::Display for Token<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}
