/**
 * The fixed block size of every volume, in bytes. It lives in `core/` because two layers that must
 * not depend on each other agree on it: the volume's on-disk format (`volume/`) and the unit payload
 * format on the wire (`transport/protocol/`), which carries whole blocks.
 */
export const BLOCK_SIZE = 4096;
