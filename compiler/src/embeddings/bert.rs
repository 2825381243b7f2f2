//! The BERT encoder of a sentence-transformers model (all-MiniLM-L6-v2), computing what candle-transformers'
//! `BertModel` computes while moving fewer bytes. Attention's scores are the largest tensors of a pass
//! (batch × heads × length² floats: 9 MB for four texts of 217 tokens), and `BertModel` walks them seven
//! times, each walk making a new tensor (scale, mask, then softmax's max, subtraction, exponent, sum and
//! division); here one walk makes the weights, with an `exp` the compiler vectorizes. One multiply makes a
//! layer's query, key and value from its input instead of three, and GELU's `erf` vectorizes too. The
//! arithmetic is the same but for that `exp` (within 3e-7), that `erf` (within 5e-7) and the order of a
//! softmax's sum, which move a vector by rounding (a test holds the two within 1e-6 of each other; they
//! differ by about 1e-7).

use candle_core::{CpuStorage, CustomOp1, CustomOp2, D, IndexOp, Layout, Module, Result, Shape, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder};
use candle_transformers::models::bert::{Config, HiddenAct};

use super::LocalModelError;
use super::weights::Weights;

/// The encoder's weights.
pub(super) struct Encoder {
    /// The word-embedding table stays in the file: a pass reads its tokens' rows (`Weights::rows`).
    weights: Weights,
    words: String,
    hidden: usize,
    positions: Embedding,
    token_types: Embedding,
    norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    activation: HiddenAct,
}

struct Layer {
    /// Query, key and value, stacked: hidden → 3 × hidden.
    query_key_value: Linear,
    attention_output: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

impl Encoder {
    /// Reads the weights under `embeddings.` and `encoder.`, or under `bert.` when the file nests them so;
    /// every tensor but the word embeddings is read now.
    pub(super) fn load(weights: Weights, config: &Config) -> std::result::Result<Encoder, LocalModelError> {
        const WORDS: &str = "embeddings.word_embeddings.weight";
        let prefix = if weights.contains(&format!("bert.{WORDS}")) { "bert." } else { "" };
        let words = format!("{prefix}{WORDS}");
        let hidden = config.hidden_size;
        if weights.shape(&words)? != [config.vocab_size, hidden] {
            return Err(LocalModelError::Load(format!(
                "`{words}` is {:?}, the configuration says [{}, {hidden}]",
                weights.shape(&words)?,
                config.vocab_size
            )));
        }
        let tensors = weights.tensors_except(&[&words])?;
        let vb = VarBuilder::from_tensors(tensors, candle_core::DType::F32, &candle_core::Device::Cpu);
        let vb = if prefix.is_empty() { vb } else { vb.pp("bert") };
        Self::load_rest(weights, words, vb, config).map_err(|e| LocalModelError::Load(e.to_string()))
    }

    fn load_rest(weights: Weights, words: String, vb: VarBuilder, config: &Config) -> Result<Encoder> {
        let hidden = config.hidden_size;
        let embeddings = vb.pp("embeddings");
        let layers = (0..config.num_hidden_layers)
            .map(|index| Layer::load(vb.pp(format!("encoder.layer.{index}")), config))
            .collect::<Result<_>>()?;
        Ok(Encoder {
            weights,
            words,
            hidden,
            positions: candle_nn::embedding(
                config.max_position_embeddings,
                hidden,
                embeddings.pp("position_embeddings"),
            )?,
            token_types: candle_nn::embedding(config.type_vocab_size, hidden, embeddings.pp("token_type_embeddings"))?,
            norm: candle_nn::layer_norm(hidden, config.layer_norm_eps, embeddings.pp("LayerNorm"))?,
            layers,
            heads: config.num_attention_heads,
            activation: config.hidden_act,
        })
    }

    /// The last layer's hidden states (batch × length × hidden) of token ids (batch × length, one token
    /// type), where `mask` (batch × length, f32) holds 1 for a token and 0 for padding.
    pub(super) fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (batch, length) = ids.dims2()?;
        let positions = Tensor::arange(0u32, length as u32, ids.device())?;
        let words = self
            .weights
            .rows(&self.words, &ids.flatten_all()?.to_vec1::<u32>()?)
            .map_err(|e| candle_core::Error::Msg(e.to_string()))?
            .reshape((batch, length, self.hidden))?;
        let embedded = (words + self.token_types.forward(&ids.zeros_like()?)?)?;
        let mut hidden = self.norm.forward(&embedded.broadcast_add(&self.positions.forward(&positions)?)?)?;
        // Added to every score of a padded key: 0 for a token, f32::MIN for padding, as `BertModel` does.
        let padding = mask.affine(-f64::from(f32::MIN), f64::from(f32::MIN))?;
        for layer in &self.layers {
            hidden = layer.forward(&hidden, &padding, self.heads, self.activation)?;
        }
        Ok(hidden)
    }
}

impl Layer {
    fn load(vb: VarBuilder, config: &Config) -> Result<Layer> {
        let (hidden, inner, eps) = (config.hidden_size, config.intermediate_size, config.layer_norm_eps);
        let attention = vb.pp("attention");
        let parts = ["query", "key", "value"].map(|part| attention.pp("self").pp(part));
        let weights = parts.iter().map(|part| part.get((hidden, hidden), "weight")).collect::<Result<Vec<_>>>()?;
        let biases = parts.iter().map(|part| part.get(hidden, "bias")).collect::<Result<Vec<_>>>()?;
        Ok(Layer {
            query_key_value: Linear::new(Tensor::cat(&weights, 0)?, Some(Tensor::cat(&biases, 0)?)),
            attention_output: candle_nn::linear(hidden, hidden, attention.pp("output.dense"))?,
            attention_norm: candle_nn::layer_norm(hidden, eps, attention.pp("output.LayerNorm"))?,
            intermediate: candle_nn::linear(hidden, inner, vb.pp("intermediate.dense"))?,
            output: candle_nn::linear(inner, hidden, vb.pp("output.dense"))?,
            output_norm: candle_nn::layer_norm(hidden, eps, vb.pp("output.LayerNorm"))?,
        })
    }

    fn forward(&self, input: &Tensor, padding: &Tensor, heads: usize, activation: HiddenAct) -> Result<Tensor> {
        let (batch, length, hidden) = input.dims3()?;
        let head_size = hidden / heads;
        let stacked = self.query_key_value.forward(input)?.reshape((batch, length, 3, heads, head_size))?;
        // batch × heads × length × head size, each
        let part = |index: usize| stacked.i((.., .., index))?.transpose(1, 2)?.contiguous();
        let (query, key, value) = (part(0)?, part(1)?, part(2)?);
        let scale = 1.0 / (head_size as f32).sqrt();
        let weights = query.matmul(&key.t()?)?.apply_op2_no_bwd(padding, &AttentionWeights { scale })?;
        let context = weights.matmul(&value)?.transpose(1, 2)?.contiguous()?.flatten_from(D::Minus2)?;
        let attended = self.attention_norm.forward(&(self.attention_output.forward(&context)? + input)?)?;
        let inner = self.intermediate.forward(&attended)?;
        let inner = match activation {
            HiddenAct::Gelu => inner.apply_op1_no_bwd(&GeluErf)?,
            HiddenAct::GeluApproximate => inner.gelu()?,
            HiddenAct::Relu => inner.relu()?,
        };
        self.output_norm.forward(&(self.output.forward(&inner)? + attended)?)
    }
}

/// Attention's weights from its scores (batch × heads × queries × keys) and the padding to add to each
/// text's keys (batch × keys): each score scaled, its key's padding added, and a softmax over the keys,
/// in one walk that makes one tensor.
struct AttentionWeights {
    scale: f32,
}

impl CustomOp2 for AttentionWeights {
    fn name(&self) -> &'static str {
        "attention-weights"
    }

    fn cpu_fwd(
        &self,
        scores: &CpuStorage,
        scores_layout: &Layout,
        padding: &CpuStorage,
        padding_layout: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (CpuStorage::F32(scores), Some((start, end)), CpuStorage::F32(padding), Some((from, to))) =
            (scores, scores_layout.contiguous_offsets(), padding, padding_layout.contiguous_offsets())
        else {
            candle_core::bail!("attention-weights takes contiguous f32 tensors");
        };
        let (batch, heads, queries, keys) = scores_layout.shape().dims4()?;
        if padding_layout.shape().dims2()? != (batch, keys) {
            candle_core::bail!(
                "attention-weights: padding of shape {:?} for {batch} texts of {keys}",
                padding_layout.shape()
            );
        }
        let padding = &padding[from..to];
        let mut weights: Vec<f32> = Vec::with_capacity(end - start);
        for (row, scores) in scores[start..end].chunks_exact(keys).enumerate() {
            let text = row / (heads * queries);
            let padding = &padding[text * keys..(text + 1) * keys];
            let first = weights.len();
            weights.extend(scores.iter().zip(padding).map(|(&score, &pad)| score * self.scale + pad));
            let row = &mut weights[first..];
            let max = lanes(row, f32::NEG_INFINITY, f32::max);
            row.iter_mut().for_each(|weight| *weight = exp_at_most_zero(*weight - max));
            let sum = lanes(row, 0.0, |sum, weight| sum + weight);
            row.iter_mut().for_each(|weight| *weight /= sum);
        }
        Ok((CpuStorage::F32(weights), scores_layout.shape().clone()))
    }
}

/// e^x for x ≤ 0 (a softmax's scores less their maximum), in steps the compiler vectorizes, where
/// `f32::exp` is a call per value (8 % of a pass): x = n·ln 2 + r with |r| ≤ ln 2 / 2, e^r by its Taylor
/// series to r⁷ (the first term left out is below 1e-8), and 2ⁿ made in the exponent's bits. Within 3e-7
/// of `f32::exp`, relatively; 0 below -87, where e^x leaves f32's normal numbers (a padded key's score).
fn exp_at_most_zero(x: f32) -> f32 {
    // Adding and then subtracting 1.5 × 2²³ rounds to the nearest integer, in instructions that vectorize.
    const ROUND: f32 = 12_582_912.0;
    const LN_2_HIGH: f32 = 0.693_145_75;
    const LN_2_LOW: f32 = 1.428_606_8e-6;
    const TAYLOR: [f32; 8] = [1.0, 1.0, 1.0 / 2.0, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0, 1.0 / 5040.0];
    let clamped = x.max(-87.0);
    let shifted = clamped * std::f32::consts::LOG2_E + ROUND;
    let n = shifted - ROUND;
    let r = clamped - n * LN_2_HIGH - n * LN_2_LOW;
    let series = TAYLOR.iter().rev().fold(0.0, |sum, &c| sum * r + c);
    // `shifted` holds n in its lowest bits (its unit is 1): 2ⁿ's exponent is n + 127, with no conversion
    // from float to integer (which Rust saturates, value by value).
    let power = f32::from_bits(shifted.to_bits().wrapping_sub(ROUND.to_bits()).wrapping_add(127) << 23);
    if x < -87.0 { 0.0 } else { series * power }
}

/// Folds `values` in eight interleaved lanes, then the lanes: a fold the compiler vectorizes (one value
/// at a time, each step waits for the one before).
fn lanes(values: &[f32], start: f32, fold: impl Fn(f32, f32) -> f32) -> f32 {
    let mut lanes = [start; 8];
    let chunks = values.chunks_exact(8);
    let rest = chunks.remainder().iter().fold(start, |acc, &value| fold(acc, value));
    for chunk in chunks {
        for (lane, &value) in lanes.iter_mut().zip(chunk) {
            *lane = fold(*lane, value);
        }
    }
    lanes.into_iter().fold(rest, fold)
}

/// GELU with the error function, as `Tensor::gelu_erf` computes it, but with an `erf` the compiler can
/// vectorize: candle's (the `libm` crate's `erff`, one value at a time through branches and an `expf`)
/// took 13 % of a forward pass. This one is the odd rational function Eigen and XLA use for `f32`, on
/// the input clamped to ±4 (beyond which `erf` is ±1 in `f32`): within 5e-7 of the true value.
struct GeluErf;

impl CustomOp1 for GeluErf {
    fn name(&self) -> &'static str {
        "gelu-erf"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let (CpuStorage::F32(values), Some((start, end))) = (storage, layout.contiguous_offsets()) else {
            candle_core::bail!("gelu-erf takes a contiguous f32 tensor");
        };
        let output = values[start..end].iter().map(|&v| (erf(v * std::f32::consts::FRAC_1_SQRT_2) + 1.0) * 0.5 * v);
        Ok((CpuStorage::F32(output.collect()), layout.shape().clone()))
    }
}

/// The error function of `x`, to within 5e-7.
fn erf(x: f32) -> f32 {
    const NUMERATOR: [f32; 7] = [
        -1.609_603_3e-2,
        -2.954_6e-3,
        -7.349_906_3e-4,
        -5.692_506_4e-5,
        -2.101_024e-6,
        2.770_681_4e-8,
        -2.726_142_3e-10,
    ];
    const DENOMINATOR: [f32; 5] = [-1.426_473_9e-2, -7.373_329_2e-3, -1.682_827e-3, -2.133_740_6e-4, -1.456_607_2e-5];
    let x = x.clamp(-4.0, 4.0);
    let square = x * x;
    let p = NUMERATOR.iter().rev().fold(0.0, |sum, &c| sum * square + c);
    let q = DENOMINATOR.iter().rev().fold(0.0, |sum, &c| sum * square + c);
    x * p / q
}

#[cfg(test)]
mod tests {
    /// Against `f64`'s error function (the `libm` crate's, which candle's `erf` also comes from), over
    /// ±6 in steps of 1e-4.
    #[test]
    fn erf_is_within_5e_7() {
        let worst = (-60_000..=60_000)
            .map(|step| step as f32 * 1e-4)
            .map(|x| (f64::from(super::erf(x)) - libm::erf(f64::from(x))).abs())
            .fold(0.0, f64::max);
        assert!(worst < 5e-7, "{worst}");
    }

    /// Against `f32::exp`, relatively, over [-87, 0] in steps of 1e-4; and 0 where `f32::exp` underflows.
    #[test]
    fn exp_is_within_3e_7() {
        let worst = (0..=870_000)
            .map(|step| -(step as f32) * 1e-4)
            .map(|x| ((super::exp_at_most_zero(x) - x.exp()) / x.exp()).abs())
            .fold(0.0, f32::max);
        assert!(worst < 3e-7, "{worst}");
        assert_eq!(super::exp_at_most_zero(f32::MIN), 0.0);
        assert_eq!(super::exp_at_most_zero(0.0), 1.0);
    }
}
