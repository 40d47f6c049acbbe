//! `.npy` inputs mapped into memory instead of read: the simulator reads
//! a large input where the page cache holds it, and nothing copies it
//! unless the kernel writes it. The command line's only `unsafe` is the
//! mapping here.
#![allow(unsafe_code)]

use std::path::Path;

use nkic_isa::DType;

use crate::fsio::ReadError;
use crate::npy::{self, Converted};

/// An input file taken as the simulator's bytes of an argument.
pub struct Loaded {
    pub shape: Vec<u64>,
    pub bytes: nkic_sim::Bytes,
}

/// Why `load` failed: the file could not be read (E9001), or it is not a
/// `.npy` file this argument can take (E1014).
pub enum LoadError {
    Read(ReadError),
    Format(String),
}

/// Loads `.npy` file `path` as an argument of `dtype`: its mapped bytes,
/// not a copy, when the file already holds the argument's bits
/// (`Converted::Verbatim`: little-endian C-order float32 for a float32
/// argument, raw bits of the argument's size), converted bytes otherwise.
pub fn load(path: &Path, dtype: DType) -> Result<Loaded, LoadError> {
    let file = map_bounded(path, crate::fsio::MAX_FILE_BYTES).map_err(LoadError::Read)?;
    let (shape, data) = npy::convert(file.as_ref(), dtype).map_err(LoadError::Format)?;
    let bytes = match data {
        Converted::Verbatim(range) => nkic_sim::Bytes::new(FileRange { file, range }),
        Converted::Owned(bytes) => nkic_sim::Bytes::from(bytes),
    };
    Ok(Loaded { shape, bytes })
}

/// Files from this size up are mapped (`map_bounded`) rather than read:
/// below it a read costs less than setting up a mapping.
const MAP_MIN_BYTES: u64 = 1 << 20;

/// A file's bytes, read or mapped.
pub enum FileBytes {
    Read(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl AsRef<[u8]> for FileBytes {
    fn as_ref(&self) -> &[u8] {
        match self {
            FileBytes::Read(bytes) => bytes,
            FileBytes::Mapped(map) => map,
        }
    }
}

/// As `fsio::read_bounded`, but a large regular file is mapped read-only
/// instead of read, so its pages are loaded as they are used and never
/// copied; a file that cannot be mapped is read.
pub fn map_bounded(path: &Path, limit: u64) -> Result<FileBytes, ReadError> {
    let file = std::fs::File::open(path).map_err(ReadError::Io)?;
    let meta = file.metadata().map_err(ReadError::Io)?;
    // Other files (small, too large, not regular) are read_bounded's.
    if meta.is_file() && (MAP_MIN_BYTES..=limit).contains(&meta.len()) {
        // SAFETY: the mapping is read-only, and its bytes change only if
        // the file is written or truncated while it is mapped. nkic never
        // does that to a file it read: `fsio::write_atomic` refuses to
        // replace an input and replaces files by renaming a new file over
        // them, which leaves the mapped file's data as it was. Another
        // process rewriting an input during a run is outside what any
        // program that maps its inputs can prevent (docs/cli.md says so).
        if let Ok(map) = unsafe { memmap2::Mmap::map(&file) } {
            crate::fsio::record_input(path);
            return Ok(FileBytes::Mapped(map));
        }
    }
    crate::fsio::read_bounded(path, limit).map(FileBytes::Read)
}

/// The data of a loaded file (`Converted::Verbatim`).
struct FileRange {
    file: FileBytes,
    range: std::ops::Range<usize>,
}

impl AsRef<[u8]> for FileRange {
    fn as_ref(&self) -> &[u8] {
        &self.file.as_ref()[self.range.clone()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::npy::{OutDType, write};

    /// A large float32 file for a float32 argument is mapped and its data
    /// taken as is; a float64 file is converted; both give exactly the
    /// bytes `npy::read` gives, and a small file is read.
    #[test]
    fn large_inputs_are_mapped_and_read_as_read_reads_them() {
        let dir = crate::fsio::scratch_dir("mapped");
        let n = 1 << 18;
        let values: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.0).collect();
        let f32_bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let f64_bytes: Vec<u8> = values
            .iter()
            .flat_map(|&v| f64::from(v).to_le_bytes())
            .collect();
        let f32_file = write(&[512, 512], DType::F32, &f32_bytes, OutDType::Native);
        let mut f64_file = f32_file.clone();
        // The same header with `<f8`, which is as long as `<f4`.
        let at = f64_file.windows(3).position(|w| w == b"<f4").unwrap();
        f64_file[at..at + 3].copy_from_slice(b"<f8");
        f64_file.truncate(f32_file.len() - f32_bytes.len());
        f64_file.extend_from_slice(&f64_bytes);
        for (name, file) in [("a.npy", &f32_file), ("b.npy", &f64_file)] {
            let path = dir.join(name);
            std::fs::write(&path, file).unwrap();
            assert!(matches!(
                map_bounded(&path, crate::fsio::MAX_FILE_BYTES),
                Ok(FileBytes::Mapped(_))
            ));
            let Ok(loaded) = load(&path, DType::F32) else {
                panic!("{name} does not load");
            };
            assert_eq!(loaded.shape, [512, 512]);
            assert_eq!(loaded.bytes[..], f32_bytes[..], "{name}");
            assert_eq!(npy::read(file, DType::F32).unwrap().bytes, f32_bytes);
        }
        let small = dir.join("c.npy");
        std::fs::write(
            &small,
            write(&[2], DType::F32, &f32_bytes[..8], OutDType::Native),
        )
        .unwrap();
        assert!(matches!(
            map_bounded(&small, crate::fsio::MAX_FILE_BYTES),
            Ok(FileBytes::Read(_))
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
