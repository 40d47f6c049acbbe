//! Prints the calibration table of `docs/cycle-model.md`, or with
//! `--write DIR` writes every bench program as `DIR/<target>/<name>.nkasm`:
//!
//! ```text
//! cargo run -p nkic-sim --example calibration
//! cargo run -p nkic-sim --example calibration -- --write kernels/bench
//! ```

use nkic_isa::Target;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(dir) = args
        .iter()
        .position(|a| a == "--write")
        .and_then(|i| args.get(i + 1))
    {
        for target in Target::ALL {
            let sub = std::path::Path::new(dir).join(target.name());
            if let Err(e) = std::fs::create_dir_all(&sub) {
                eprintln!("error: {}: {e}", sub.display());
                std::process::exit(1);
            }
            for b in nkic_sim::calibration::benches(target) {
                let path = sub.join(format!("{}.nkasm", b.name));
                if let Err(e) = std::fs::write(&path, &b.text) {
                    eprintln!("error: {}: {e}", path.display());
                    std::process::exit(1);
                }
            }
        }
        return;
    }
    match nkic_sim::calibration::table(&[Target::Trn3, Target::Trn2, Target::Trn1]) {
        Ok(table) => print!("{table}"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
