// WebAssembly entry: exports the decoder functions and the addresses of the
// shared buffers so the host can read and write them without copies.
import { IN, F, IVB, CTRL, REC } from "./state";
import { LAYOUT, FVAL, decodeBinary } from "./binframe";
import { begin, beginBytes, inspect, resume } from "./decoder";
import { hexToFrame } from "./hex";
import { fmtScope, fmtTmpPtr, fmtRead, fmtPut, knownPut } from "./compact";

export { begin, beginBytes, inspect, resume, decodeBinary, hexToFrame, fmtScope, fmtTmpPtr, fmtRead, fmtPut, knownPut };

export function inPtr(): usize {
  return IN.dataStart;
}
export function framePtr(): usize {
  return F.dataStart;
}
export function ivPtr(): usize {
  return IVB.dataStart;
}
export function ctrlPtr(): usize {
  return CTRL.dataStart;
}
export function recPtr(): usize {
  return REC.dataStart;
}
export function layoutPtr(): usize {
  return LAYOUT.dataStart;
}
export function fvalPtr(): usize {
  return FVAL.dataStart;
}
