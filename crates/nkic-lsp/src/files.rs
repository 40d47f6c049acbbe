//! Reading files from disk with a bound: the language server's imports and
//! `nkic.toml` (and, through `nkic`'s `fsio`, every file the command line
//! reads).
//!
//! Only regular files are read (not a FIFO, `/dev/zero` or a directory),
//! their size is checked from the metadata before reading, and the read
//! itself stops past the limit in case the file grows.

use std::io::Read;
use std::path::Path;

use nkic_specialize::{ModuleLoader, NotUtf8};

/// The largest file nkic reads: 4 GiB (offsets are `u32`).
pub const MAX_FILE_BYTES: u64 = u32::MAX as u64;

/// Why a file could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// An IO error (missing file, permissions).
    Io(std::io::Error),
    /// Not a regular file.
    NotAFile,
    /// Larger than the limit: its size.
    TooLarge(u64),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io(err) => write!(f, "{err}"),
            ReadError::NotAFile => f.write_str("it is not a regular file"),
            ReadError::TooLarge(n) => write!(
                f,
                "it is too large ({n} bytes; the limit is {MAX_FILE_BYTES} bytes)"
            ),
        }
    }
}

/// Reads a regular file of at most `limit` bytes.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let file = std::fs::File::open(path).map_err(ReadError::Io)?;
    let meta = file.metadata().map_err(ReadError::Io)?;
    if !meta.is_file() {
        return Err(ReadError::NotAFile);
    }
    if meta.len() > limit {
        return Err(ReadError::TooLarge(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge(bytes.len() as u64));
    }
    Ok(bytes)
}

/// A [`ModuleLoader`] over the file system that answers first from `open`
/// (an editor's unsaved texts, by path): modules that cannot be read are
/// missing, a manifest or module that is not UTF-8 is reported.
pub struct DiskLoader<'a> {
    pub open: &'a std::collections::BTreeMap<String, String>,
}

impl ModuleLoader for DiskLoader<'_> {
    fn read(&self, path: &str) -> Option<String> {
        self.read_source(path).ok().flatten()
    }

    fn read_source(&self, path: &str) -> Result<Option<String>, NotUtf8> {
        if let Some(text) = self.open.get(path) {
            return Ok(Some(text.clone()));
        }
        match read_bounded(Path::new(path), MAX_FILE_BYTES) {
            Ok(bytes) => NotUtf8::decode(bytes).map(Some),
            Err(_) => Ok(None),
        }
    }
}
