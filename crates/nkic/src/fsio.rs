//! Reading inputs with a bound and writing outputs atomically.
//!
//! Every file nkic reads (kernels, modules, `.npy` inputs, programs, the
//! sources a fault names) goes through [`read_bounded`]
//! (`nkic_lsp::files::read_bounded`, shared with the language server:
//! regular files only, size checked before reading), or, for `.npy`
//! inputs, `mapped::map_bounded`, which maps large files instead. Every file nkic writes goes through
//! [`write_atomic`]: the bytes go to a temporary file in the same directory
//! that is then renamed over the target, so a failed write leaves no
//! half-written output, and a target that is one of the files this run read
//! is refused, so `nkic compile k.py -o k.py` cannot destroy the kernel.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use nkic_diag::Diagnostic;

pub use nkic_lsp::files::{MAX_FILE_BYTES, ReadError};

/// The files read so far (canonical paths), which no output may replace.
static INPUTS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Reads a regular file of at most `limit` bytes and records it as an input.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let bytes = nkic_lsp::files::read_bounded(path, limit)?;
    record_input(path);
    Ok(bytes)
}

/// Records `path` as a file this run read, which no output may replace.
pub fn record_input(path: &Path) {
    if let Ok(canonical) = path.canonicalize()
        && let Ok(mut inputs) = INPUTS.lock()
        && !inputs.contains(&canonical)
    {
        inputs.push(canonical);
    }
}

/// Reads a text file (a module, a source a fault names) if it is a regular,
/// valid UTF-8 file within the size limit.
pub fn read_text(path: &Path) -> Option<String> {
    String::from_utf8(read_bounded(path, MAX_FILE_BYTES).ok()?).ok()
}

/// Creates the output directory `dir` (`--out`) and its parents; a
/// failure is E9004.
pub fn create_output_dir(dir: &Path) -> Result<(), Diagnostic> {
    std::fs::create_dir_all(dir).map_err(|err| {
        Diagnostic::error(
            "E9004",
            format!(
                "cannot create the output directory `{}`: {err}",
                dir.display()
            ),
        )
    })
}

/// Writes `data` to `path` atomically (a temporary file renamed over it);
/// a failure, or a `path` that is one of the files this run read, is E9005.
pub fn write_atomic(path: &Path, data: &[u8]) -> Result<(), Diagnostic> {
    write_atomic_with(path, |mut file| std::io::Write::write_all(&mut file, data))
}

/// As [`write_atomic`], with the file's bytes written by `fill` into the
/// new, empty file (a `.npy` header and its data streamed without joining
/// or converting them whole first, by more than one thread at their
/// offsets where that is quicker).
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&std::fs::File) -> std::io::Result<()>,
) -> Result<(), Diagnostic> {
    let failed = |why: String| {
        Diagnostic::error("E9005", format!("cannot write `{}`: {why}", path.display()))
    };
    if let Ok(canonical) = path.canonicalize()
        && INPUTS
            .lock()
            .is_ok_and(|inputs| inputs.contains(&canonical))
    {
        return Err(failed("it is an input of this command".to_string())
            .with_help("write the output to another file"));
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.nkic-{}.tmp", std::process::id()));
    let write = || -> std::io::Result<()> {
        let file = std::fs::File::create(&tmp)?;
        fill(&file)?;
        drop(file);
        // The old file's name goes first: renaming over an existing file
        // makes ext4 start writing the new one back at once (its
        // `auto_da_alloc`), 2 ms of a 2 MiB output. Had it failed, the
        // rename would report why.
        let _ = std::fs::remove_file(path);
        std::fs::rename(&tmp, path)
    };
    let result = write();
    if let Err(err) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(failed(err.to_string()));
    }
    Ok(())
}

/// The directory `nkic-<name>-<pid>` in the system's temporary directory,
/// created, for a unit test's files.
#[cfg(test)]
pub(crate) fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("nkic-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_bounded_and_writes_spare_inputs() {
        let dir = scratch_dir("fsio");
        let input = dir.join("k.py");
        std::fs::write(&input, "x = 1\n").unwrap();
        assert!(matches!(
            read_bounded(&input, 3),
            Err(ReadError::TooLarge(6))
        ));
        assert!(matches!(read_bounded(&dir, 100), Err(ReadError::NotAFile)));
        assert_eq!(read_bounded(&input, 100).unwrap(), b"x = 1\n");
        let err = write_atomic(&input, b"clobbered").unwrap_err();
        assert_eq!(err.code, "E9005");
        assert_eq!(std::fs::read(&input).unwrap(), b"x = 1\n");
        let out = dir.join("out.txt");
        write_atomic(&out, b"dump").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"dump");
        write_atomic(&out, b"again").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"again");
        let missing = dir.join("no/such/dir/out.txt");
        assert_eq!(write_atomic(&missing, b"x").unwrap_err().code, "E9005");
        let leftovers = std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(leftovers, 2, "no temporary file is left behind");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
