//! The nkic command-line interface.

fn main() {}
