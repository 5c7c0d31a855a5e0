import { CustodyError } from "../core/index.ts";

/**
 * Stable codes of every error the volume store throws (WalDamagedError, with the report it carries, is in
 * recovery-report.ts).
 */
export const VolumeErrorCode = {
  HeaderCorrupt: "volume_header_corrupt",
  FileSize: "volume_file_size",
  CheckpointCorrupt: "volume_checkpoint_corrupt",
  Damaged: "volume_block_damaged",
  WalDamaged: "volume_wal_damaged",
  BadRequest: "volume_bad_request",
  NoSpace: "volume_no_space",
  Closed: "volume_closed",
  Exists: "volume_exists",
  NotFound: "volume_not_found",
} as const;
/** One of the VolumeErrorCode values. */
export type VolumeErrorCode = (typeof VolumeErrorCode)[keyof typeof VolumeErrorCode];

/** The header file is missing, truncated, or fails its magic/version/CRC/geometry checks. */
export class HeaderCorruptError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown> = {}) {
    super(VolumeErrorCode.HeaderCorrupt, message, detail);
  }
}

/** The extent or WAL file is shorter than the header says: refusing to mount a silently shorter volume. */
export class FileSizeError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown> = {}) {
    super(VolumeErrorCode.FileSize, message, detail);
  }
}

/** Neither checkpoint slot holds a valid checkpoint, so no replay start point can be trusted. */
export class CheckpointCorruptError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown> = {}) {
    super(VolumeErrorCode.CheckpointCorrupt, message, detail);
  }
}

/** A read touched an LBA whose data failed its CRC (at recovery or on read). Never silent wrong data. */
export class DamagedBlockError extends CustodyError {
  constructor(
    readonly lba: number,
    detail: Record<string, unknown> = {},
  ) {
    super(VolumeErrorCode.Damaged, `block ${lba} is damaged (data does not match its checksum)`, { lba, ...detail });
  }
}

/** A request is malformed: LBA out of range, wrong buffer size, zero-length write and the like. */
export class BadRequestError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown> = {}) {
    super(VolumeErrorCode.BadRequest, message, detail);
  }
}

/** No free physical blocks even after a checkpoint (the write is larger than the CoW spare). */
export class NoSpaceError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown> = {}) {
    super(VolumeErrorCode.NoSpace, message, detail);
  }
}

/** The volume was closed (or failed and fenced itself) and accepts no more operations. */
export class VolumeClosedError extends CustodyError {
  constructor(message = "volume is closed", detail: Record<string, unknown> = {}) {
    super(VolumeErrorCode.Closed, message, detail);
  }
}

/** `create` found an existing volume at the path. */
export class VolumeExistsError extends CustodyError {
  constructor(dir: string) {
    super(VolumeErrorCode.Exists, `a volume already exists at ${dir}`, { dir });
  }
}

/** `open` found no volume header at the path. */
export class VolumeNotFoundError extends CustodyError {
  constructor(dir: string) {
    super(VolumeErrorCode.NotFound, `no volume at ${dir}`, { dir });
  }
}
