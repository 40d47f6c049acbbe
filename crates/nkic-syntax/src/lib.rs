//! Lexer, layout pass, parser and AST of the NKI kernel language.
