//! A safetensors file read tensor by tensor. A search process embeds one query and needs a handful of the
//! word-embedding table's rows (46 MB of all-MiniLM-L6-v2's 91 MB), so that table stays in the file and
//! each forward pass reads the rows of its tokens; the other tensors are read once, each straight into the
//! buffer that becomes its tensor. Reading the whole file and letting candle copy every tensor out of it
//! cost 190 ms of system time per process (two copies of 91 MB, page by page); no `unsafe` memory map is
//! needed for this, and a file changed under a running process gives an error, never undefined behaviour.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use rayon::prelude::*;
use serde::Deserialize;

use super::LocalModelError;

/// A safetensors header larger than this is not a model we read (all-MiniLM-L6-v2's is 13 KB).
const MAX_HEADER: u64 = 64 << 20;

/// The tensors of one safetensors file, by name, read on demand.
pub(super) struct Weights {
    file: File,
    path: PathBuf,
    tensors: HashMap<String, Entry>,
}

/// Where one tensor's bytes lie in the file, and how to read them.
struct Entry {
    dtype: DType,
    shape: Vec<usize>,
    /// Where its bytes start in the file (the header checked that they end inside it).
    start: u64,
}

#[derive(Deserialize)]
struct HeaderEntry {
    dtype: String,
    shape: Vec<usize>,
    data_offsets: (u64, u64),
}

impl Weights {
    /// Reads the file's header; an error names the file and what is wrong with it.
    pub(super) fn open(path: &Path) -> Result<Weights, LocalModelError> {
        let fail = |error: String| LocalModelError::File { path: path.to_path_buf(), error };
        let file = File::open(path).map_err(|e| fail(e.to_string()))?;
        let file_len = file.metadata().map_err(|e| fail(e.to_string()))?.len();
        let mut length = [0u8; 8];
        file.read_exact_at(&mut length, 0)
            .map_err(|_| fail("not a safetensors file: shorter than its header".into()))?;
        let header_len = u64::from_le_bytes(length);
        if header_len > MAX_HEADER || 8 + header_len > file_len {
            return Err(fail(format!("not a safetensors file: a header of {header_len} bytes in {file_len}")));
        }
        let mut header = vec![0u8; usize::try_from(header_len).map_err(|e| fail(e.to_string()))?];
        file.read_exact_at(&mut header, 8).map_err(|e| fail(e.to_string()))?;
        let entries: HashMap<String, serde_json::Value> =
            serde_json::from_slice(&header).map_err(|e| fail(format!("not a safetensors header: {e}")))?;
        let data_start = 8 + header_len;
        let mut tensors = HashMap::new();
        for (name, value) in entries {
            if name == "__metadata__" {
                continue;
            }
            let entry: HeaderEntry =
                serde_json::from_value(value).map_err(|e| fail(format!("tensor `{name}`: {e}")))?;
            let dtype = dtype(&entry.dtype).ok_or_else(|| fail(format!("tensor `{name}`: dtype {}", entry.dtype)))?;
            let (start, end) = (data_start + entry.data_offsets.0, data_start.saturating_add(entry.data_offsets.1));
            let elements = entry.shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d as u64));
            let expected = elements.and_then(|n| n.checked_mul(dtype.size_in_bytes() as u64));
            if start > end || end > file_len || expected != Some(end - start) {
                return Err(fail(format!("tensor `{name}`: its bytes {start}..{end} do not hold {:?}", entry.shape)));
            }
            tensors.insert(name, Entry { dtype, shape: entry.shape, start });
        }
        Ok(Weights { file, path: path.to_path_buf(), tensors })
    }

    fn fail(&self, error: String) -> LocalModelError {
        LocalModelError::File { path: self.path.clone(), error }
    }

    fn entry(&self, name: &str) -> Result<&Entry, LocalModelError> {
        self.tensors.get(name).ok_or_else(|| self.fail(format!("no tensor `{name}`")))
    }

    /// Whether the file holds a tensor of that name.
    pub(super) fn contains(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    /// The shape of tensor `name`.
    pub(super) fn shape(&self, name: &str) -> Result<&[usize], LocalModelError> {
        Ok(&self.entry(name)?.shape)
    }

    /// Every tensor but those `skip` names, as f32 tensors.
    /// They are read in parallel: most of a read's time is the kernel giving the buffer fresh pages, which
    /// two cores do at once.
    pub(super) fn tensors_except(&self, skip: &[&str]) -> Result<HashMap<String, Tensor>, LocalModelError> {
        self.tensors
            .par_iter()
            .filter(|(name, _)| !skip.contains(&name.as_str()))
            .map(|(name, entry)| Ok((name.clone(), self.read(name, entry.dtype, entry.shape.clone(), &[entry.start])?)))
            .collect()
    }

    /// Rows `ids` of the two-dimensional tensor `name`, as an f32 tensor (ids × columns). An id past the
    /// table is an error, as candle's embedding lookup would give.
    pub(super) fn rows(&self, name: &str, ids: &[u32]) -> Result<Tensor, LocalModelError> {
        let entry = self.entry(name)?;
        let [count, columns] = entry.shape[..] else {
            return Err(self.fail(format!("`{name}` is not a table: {:?}", entry.shape)));
        };
        let row_bytes = (columns * entry.dtype.size_in_bytes()) as u64;
        let starts = ids
            .iter()
            .map(|&id| match id as usize {
                id if id < count => Ok(entry.start + id as u64 * row_bytes),
                _ => Err(LocalModelError::Run(format!("token id {id} is past `{name}`'s {count} rows"))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.read(name, entry.dtype, vec![ids.len(), columns], &starts)
    }

    /// A tensor of `shape` from equal parts of the file starting at `starts`. An f32 tensor's bytes are
    /// read into the buffer that becomes the tensor: no second copy (the file is little-endian, as is
    /// every target this builds for).
    fn read(&self, name: &str, dtype: DType, shape: Vec<usize>, starts: &[u64]) -> Result<Tensor, LocalModelError> {
        let elements = shape.iter().product::<usize>();
        let part = elements / starts.len().max(1) * dtype.size_in_bytes();
        let fill = |bytes: &mut [u8]| -> Result<(), LocalModelError> {
            for (&start, bytes) in starts.iter().zip(bytes.chunks_exact_mut(part.max(1))) {
                self.file.read_exact_at(bytes, start).map_err(|e| self.fail(format!("`{name}`: {e}")))?;
            }
            Ok(())
        };
        let tensor = if dtype == DType::F32 && cfg!(target_endian = "little") {
            let mut values = vec![0f32; elements];
            fill(bytemuck::cast_slice_mut(&mut values))?;
            Tensor::from_vec(values, shape, &Device::Cpu)
        } else {
            let mut bytes = vec![0u8; elements * dtype.size_in_bytes()];
            fill(&mut bytes)?;
            Tensor::from_raw_buffer(&bytes, dtype, &shape, &Device::Cpu).and_then(|t| t.to_dtype(DType::F32))
        };
        tensor.map_err(|e| self.fail(format!("`{name}`: {e}")))
    }
}

/// The candle type of a safetensors dtype name. Files hold integer tensors beside the weights (BERT's
/// `position_ids`); every tensor is read as f32 all the same, as candle's variable builder reads them.
fn dtype(name: &str) -> Option<DType> {
    match name {
        "U8" => Some(DType::U8),
        "U32" => Some(DType::U32),
        "I64" => Some(DType::I64),
        "F32" => Some(DType::F32),
        "F16" => Some(DType::F16),
        "BF16" => Some(DType::BF16),
        "F64" => Some(DType::F64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A safetensors file of the given tensors (name, shape, f32 values).
    fn file(tensors: &[(&str, Vec<usize>, Vec<f32>)]) -> (tempfile::TempDir, PathBuf) {
        let mut header = serde_json::Map::new();
        let mut data = Vec::new();
        for (name, shape, values) in tensors {
            let start = data.len();
            data.extend(values.iter().flat_map(|v| v.to_le_bytes()));
            header.insert(
                (*name).to_string(),
                serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [start, data.len()]}),
            );
        }
        let header = serde_json::to_vec(&header).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.safetensors");
        let bytes = [&(header.len() as u64).to_le_bytes()[..], &header, &data].concat();
        std::fs::write(&path, bytes).unwrap();
        (dir, path)
    }

    #[test]
    fn rows_and_tensors_read_what_the_file_holds() {
        let (_dir, path) =
            file(&[("table", vec![3, 2], vec![0.0, 1.0, 10.0, 11.0, 20.0, 21.0]), ("bias", vec![2], vec![0.5, -0.5])]);
        let weights = Weights::open(&path).unwrap();
        let rows = weights.rows("table", &[2, 0, 2]).unwrap();
        assert_eq!(rows.to_vec2::<f32>().unwrap(), [[20.0, 21.0], [0.0, 1.0], [20.0, 21.0]]);
        let rest = weights.tensors_except(&["table"]).unwrap();
        assert_eq!(rest.keys().collect::<Vec<_>>(), ["bias"]);
        assert_eq!(rest["bias"].to_vec1::<f32>().unwrap(), [0.5, -0.5]);
        assert!(weights.rows("table", &[3]).is_err(), "a row past the table");
    }

    #[test]
    fn a_damaged_file_is_an_error_naming_it() {
        let (dir, path) = file(&[("table", vec![3, 2], vec![0.0; 6])]);
        let bytes = std::fs::read(&path).unwrap();
        let cases: [(&str, Vec<u8>); 4] = [
            ("short", bytes[..4].to_vec()),
            ("huge header", [&u64::MAX.to_le_bytes()[..], &bytes[8..]].concat()),
            ("truncated data", bytes[..bytes.len() - 4].to_vec()),
            ("not json", [&bytes[..8], &vec![b'x'; bytes.len() - 8][..]].concat()),
        ];
        for (case, damaged) in cases {
            let path = dir.path().join(case);
            std::fs::write(&path, damaged).unwrap();
            let error = Weights::open(&path).err().unwrap_or_else(|| panic!("{case}: opened"));
            assert!(error.to_string().contains(&path.display().to_string()), "{case}: {error}");
        }
    }
}
