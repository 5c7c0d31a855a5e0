/** Public face of `actors/holder/` for the other actor sub-folders: a running holder's handle. */
export { startHolder, HolderStartError, type Holder, type HolderLaneView } from "./holder.ts";
