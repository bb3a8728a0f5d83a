// The same decoder sources run as plain JavaScript (AssemblyScript portable
// mode): the host imports this module after assemblyscript/std/portable.
// Used by bench/decode to compare WASM with JS on identical logic.
export { IN, F, IVB, CTRL, REC } from "./state";
export { LAYOUT, FVAL, decodeBinary } from "./binframe";
export { begin, beginBytes, inspect, resume } from "./decoder";
export { hexToFrame } from "./hex";
export { fmtScope, fmtTmpPtr, fmtRead, fmtPut } from "./compact";
