//! The bytes an instruction's operands really touch.
//!
//! An operand's access pattern names exactly the bytes the instruction
//! reads or writes, with one exception: the scale operands of the MX
//! instructions (`Layout::MxScaleOf` in the instruction table:
//! `nc_matmul_mx`'s `stationary_scale` and `moving_scale`, `quantize_mx`'s
//! `dst_scale`). Their patterns span the
//! `32·(P/32 − 1) + 4` partitions from the first to the last scale row,
//! but the hardware reads (or writes) only the scale partition of each
//! group of 8 data partitions: `32·(k div 32) + (k mod 32) div 8` for data
//! partition `k` (docs/isa.md, `nc_matmul_mx`), i.e. the first 4 rows of
//! every 32-partition quadrant. The rows in between belong to whatever
//! else the kernel keeps there; counting them as accessed would make the
//! uninitialised-read check, the race detector and the dependent-issue
//! rule see accesses the machine never makes.
//!
//! [`operand_views`] resolves every operand of an instruction to the
//! views of the bytes it touches: one view per operand, except an MX scale
//! operand, which becomes one view per quadrant's scale rows.

use nkic_isa::{AccessPattern, Layout, Op, Operand, Role};

use crate::memory::View;

/// The scale rows, relative to the scale operand's first partition, that
/// an MX instruction over `data_rows` data partitions touches, as
/// `(first, count)` ranges: per 32-partition quadrant `q`, the rows
/// `32q .. 32q + ceil(d / 8)` with `d` the quadrant's data partitions.
pub(crate) fn mx_scale_rows(data_rows: usize) -> Vec<(usize, usize)> {
    (0..data_rows.div_ceil(32))
        .map(|q| {
            let d = (data_rows - 32 * q).min(32);
            (32 * q, d.div_ceil(8))
        })
        .collect()
}

/// One view of the bytes an operand of an instruction touches.
pub(crate) struct OperandView {
    pub field: &'static str,
    pub role: Role,
    pub layout: Layout,
    pub view: View,
}

impl OperandView {
    fn of(o: &Operand<'_>, view: View) -> OperandView {
        OperandView {
            field: o.field,
            role: o.role,
            layout: o.layout,
            view,
        }
    }
}

/// The views of the bytes each operand of `op` touches, with the field
/// and role of the operand (`view` resolves an access pattern; operands
/// it cannot resolve are left out). An MX scale operand gives one view per
/// quadrant's scale rows (rows beyond the pattern's are clipped); if its
/// data operand does not resolve, the whole pattern is kept.
pub(crate) fn operand_views(
    op: &Op,
    view: impl Fn(&AccessPattern, &'static str) -> Option<View>,
) -> Vec<OperandView> {
    let operands = op.operands();
    let mut out = Vec::with_capacity(operands.len());
    for o in &operands {
        let Some(v) = view(o.ap, o.field) else {
            continue;
        };
        let data_rows = match o.layout {
            Layout::MxScaleOf(data) => Some(data),
            _ => None,
        }
        .and_then(|data| {
            let d = operands.iter().find(|d| d.field == data)?;
            view(d.ap, d.field).map(|d| d.rows)
        });
        match data_rows {
            Some(p) => {
                for (first, count) in mx_scale_rows(p) {
                    let count = count.min(v.rows.saturating_sub(first));
                    if count > 0 {
                        out.push(OperandView::of(o, v.sub_rows(first, count)));
                    }
                }
            }
            None => out.push(OperandView::of(o, v)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_rows_are_four_per_full_quadrant() {
        assert_eq!(mx_scale_rows(128), vec![(0, 4), (32, 4), (64, 4), (96, 4)]);
        assert_eq!(mx_scale_rows(32), vec![(0, 4)]);
        // A partial last quadrant: 16 data partitions need 2 scale rows,
        // 9 need 2, 8 need 1.
        assert_eq!(mx_scale_rows(48), vec![(0, 4), (32, 2)]);
        assert_eq!(mx_scale_rows(41), vec![(0, 4), (32, 2)]);
        assert_eq!(mx_scale_rows(8), vec![(0, 1)]);
        assert_eq!(mx_scale_rows(0), vec![]);
    }
}
