//! Engines and instruction queues of one NeuronCore.
//!
//! A `Queue` is one in-order instruction stream. There is one queue per
//! compute engine (Tensor, Vector, Scalar, GpSimd) plus the Sync engine's
//! sequencer, and `Target::figures().dma_queues` DMA queues `dma0..dmaN`.
//! In this pseudo-ISA a DMA queue is a sequencer of its own: it runs DMA
//! instructions and the control instructions (registers, branches, `nop`)
//! that its loops need, so a dynamic loop of DMAs is expressed directly in
//! the DMA queue's stream.

use std::fmt;

/// The unit that executes an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Engine {
    /// TensorE (PE array): matmuls and transposes, SBUF in, PSUM out.
    Tensor,
    /// VectorE (DVE).
    Vector,
    /// ScalarE (ACT).
    Scalar,
    /// GpSimd (POOL): 8 SIMD cores, each wired to 16 partitions; no PSUM.
    GpSimd,
    /// The Sync engine (SP): a sequencer with no datapath.
    Sync,
    /// The DMA engines, reached through the DMA queues.
    Dma,
}

impl Engine {
    /// The compute and sync engines, in the order queues are printed.
    pub const SEQUENCERS: [Engine; 5] = [
        Engine::Tensor,
        Engine::Vector,
        Engine::Scalar,
        Engine::GpSimd,
        Engine::Sync,
    ];

    /// The engine named `name` (see [`Engine::name`]).
    pub fn from_name(name: &str) -> Option<Engine> {
        Engine::SEQUENCERS
            .into_iter()
            .chain([Engine::Dma])
            .find(|e| e.name() == name)
    }

    /// The NKI spelling (`nisa.engine.<name>`), plus `dma`.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Tensor => "tensor",
            Engine::Vector => "vector",
            Engine::Scalar => "scalar",
            Engine::GpSimd => "gpsimd",
            Engine::Sync => "sync",
            Engine::Dma => "dma",
        }
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One instruction stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Queue {
    Tensor,
    Vector,
    Scalar,
    GpSimd,
    Sync,
    /// DMA queue `n` (`dma<n>`); the target bounds `n`.
    Dma(u8),
}

impl Queue {
    /// The engine that executes this queue's data instructions.
    pub fn engine(self) -> Engine {
        match self {
            Queue::Tensor => Engine::Tensor,
            Queue::Vector => Engine::Vector,
            Queue::Scalar => Engine::Scalar,
            Queue::GpSimd => Engine::GpSimd,
            Queue::Sync => Engine::Sync,
            Queue::Dma(_) => Engine::Dma,
        }
    }

    /// The queue of a sequencer engine; `None` for `Engine::Dma`, which has
    /// several queues.
    pub fn of_engine(engine: Engine) -> Option<Queue> {
        match engine {
            Engine::Tensor => Some(Queue::Tensor),
            Engine::Vector => Some(Queue::Vector),
            Engine::Scalar => Some(Queue::Scalar),
            Engine::GpSimd => Some(Queue::GpSimd),
            Engine::Sync => Some(Queue::Sync),
            Engine::Dma => None,
        }
    }

    /// One queue of each sequencer and the DMA queues 0, 15 and 200 (more
    /// than any target has), for tests.
    #[cfg(test)]
    pub(crate) fn samples() -> Vec<Queue> {
        Engine::SEQUENCERS
            .into_iter()
            .filter_map(Queue::of_engine)
            .chain([Queue::Dma(0), Queue::Dma(15), Queue::Dma(200)])
            .collect()
    }

    /// Parses `tensor`, `vector`, `scalar`, `gpsimd`, `sync` or `dma<n>`.
    /// The queue count of the target is checked by the verifier.
    pub fn from_name(text: &str) -> Option<Queue> {
        match text {
            "tensor" => Some(Queue::Tensor),
            "vector" => Some(Queue::Vector),
            "scalar" => Some(Queue::Scalar),
            "gpsimd" => Some(Queue::GpSimd),
            "sync" => Some(Queue::Sync),
            _ => {
                let digits = text.strip_prefix("dma")?;
                // Reject `dma`, `dma01` and `dma+1` so every queue has one spelling.
                if digits.is_empty()
                    || !digits.bytes().all(|b| b.is_ascii_digit())
                    || (digits.len() > 1 && digits.starts_with('0'))
                {
                    return None;
                }
                digits.parse::<u8>().ok().map(Queue::Dma)
            }
        }
    }
}

impl fmt::Display for Queue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Queue::Dma(n) => write!(f, "dma{n}"),
            other => f.write_str(other.engine().name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_names_round_trip() {
        for q in Queue::samples()
            .into_iter()
            .filter(|&q| q != Queue::Dma(200))
        {
            assert_eq!(Queue::from_name(&q.to_string()), Some(q));
        }
        assert_eq!(Queue::from_name("dma"), None);
        assert_eq!(Queue::from_name("dma07"), None);
        assert_eq!(Queue::from_name("dma300"), None);
        assert_eq!(Queue::Dma(3).engine(), Engine::Dma);
    }
}
