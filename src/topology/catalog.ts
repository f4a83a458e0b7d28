/**
 * The interconnect catalog: every link kind a topology may use, with its raw per-direction
 * bandwidth per link, the latency of one traversal, and the fraction of the raw rate a
 * collective library sustains on it (encoding, packet headers, flow control). Bandwidths are
 * GB/s (10^9 bytes/s) per direction. Each figure names its source; where no public measurement
 * was at hand the efficiency is marked as an assumption and the reason given.
 *
 * Sources, abbreviated below:
 *   [HW]    the project's ../shared/reference/hardware.md (vendors' specifications, NCCL tuning
 *           constants and public benchmark logs, collected there).
 *   [NCCL]  NCCL src/graph/topo.h / tuning.cc bandwidth constants (as quoted in [HW]).
 *   [PCISIG] PCI-SIG base specifications (raw rate per lane after 128b/130b or FLIT encoding).
 *   [IBTA]  InfiniBand Trade Association roadmap (HDR 200, NDR 400, XDR 800 Gb/s per 4x port).
 *   [C1]..[C7] the calibration rows of [HW]; efficiencies fitted to them are said to be.
 */
export interface LinkKind {
  readonly id: string;
  readonly label: string;
  /** Raw bandwidth of one link, per direction, GB/s. */
  readonly gbps: number;
  /** One traversal, microseconds. */
  readonly latencyUs: number;
  /** Fraction of `gbps` a library sustains for large transfers. */
  readonly efficiency: number;
  readonly family: LinkFamily;
  /**
   * Network kinds whose NCCL network plugin brings its own tuner, which picks the algorithms in
   * place of NCCL's cost model (sim/nccl-tuner.ts) where it knows the platform (AWS's regions on
   * P5: sim/aws-region-tuner.ts; where it hands a call back, sim/nccl-graphs.ts).
   */
  readonly pluginTuner?: boolean;
  readonly source: string;
}

/** What the engine and the link report group by: fabric inside a server, host bus, or network. */
export type LinkFamily = 'scale-up' | 'host' | 'network' | 'memory';

const kind = (k: LinkKind): LinkKind => k;

export const LINK_KINDS = {
  // PCIe x16: raw = 16 lanes x per-lane rate after encoding [PCISIG, HW]. Latency ~1 us per hop [HW].
  pcie3: kind({
    id: 'pcie3',
    label: 'PCIe 3.0 x16',
    gbps: 15.75,
    latencyUs: 1,
    efficiency: 12 / 15.75,
    family: 'host',
    source: '[PCISIG] 0.985 GB/s/lane x16; efficiency: NCCL models Gen3 x16 as 12 GB/s [NCCL via HW]',
  }),
  pcie4: kind({
    id: 'pcie4',
    label: 'PCIe 4.0 x16',
    gbps: 31.5,
    latencyUs: 1,
    efficiency: 25.6 / 31.5,
    family: 'host',
    source: '[PCISIG] 1.97 GB/s/lane x16; efficiency: 25.6 GB/s used by SimAI for A100 hosts [HW]',
  }),
  pcie5: kind({
    id: 'pcie5',
    label: 'PCIe 5.0 x16',
    gbps: 63,
    latencyUs: 1,
    efficiency: 55 / 63,
    family: 'host',
    source: '[PCISIG] 3.94 GB/s/lane x16; efficiency: host<->device copies measured ~55 GB/s on H200 hosts [HW]',
  }),
  pcie6: kind({
    id: 'pcie6',
    label: 'PCIe 6.0 x16',
    gbps: 121,
    latencyUs: 1,
    efficiency: 55 / 63,
    family: 'host',
    source: '[PCISIG] 64 GT/s PAM4 FLIT x16 ~121 GB/s [HW]; efficiency assumed equal to Gen5 (no public measurement)',
  }),
  // NVLink: per link per direction [HW]; efficiency = NCCL per-link model / raw, except where a
  // calibration row measures the generation directly.
  nvlink1: kind({
    id: 'nvlink1',
    label: 'NVLink 1 (P100)',
    gbps: 20,
    latencyUs: 0.5,
    efficiency: 18 / 20,
    family: 'scale-up',
    source:
      '20 GB/s x4 per P100 [HW]; efficiency: NCCL per-link model 18 [NCCL via HW]; latency ~1 us GPU to GPU [HW], half per traversal',
  }),
  nvlink2: kind({
    id: 'nvlink2',
    label: 'NVLink 2 (V100)',
    gbps: 25,
    latencyUs: 0.5,
    efficiency: 20 / 25,
    family: 'scale-up',
    source: '25 GB/s x6 per V100 [HW]; efficiency: NCCL per-link model 20 [NCCL via HW]',
  }),
  nvlink3: kind({
    id: 'nvlink3',
    label: 'NVLink 3 (A100)',
    gbps: 25,
    latencyUs: 0.5,
    efficiency: 0.78,
    family: 'scale-up',
    source:
      "25 GB/s x12 per A100 [HW]; efficiency 0.78: between NCCL's 20/25 model and the 231.6 GB/s busbw of [C1] (0.772 of raw)",
  }),
  nvlink4: kind({
    id: 'nvlink4',
    label: 'NVLink 4 (H100/H200)',
    gbps: 25,
    latencyUs: 0.5,
    efficiency: 20.6 / 25,
    family: 'scale-up',
    source:
      '25 GB/s x18 per H100 [HW]; efficiency: NCCL per-link model 20.6 [NCCL via HW], agrees with [C3] ring 367.6/450',
  }),
  nvlink5: kind({
    id: 'nvlink5',
    label: 'NVLink 5 (B200/GB200)',
    gbps: 50,
    latencyUs: 0.5,
    efficiency: 40.1 / 50,
    family: 'scale-up',
    source: '50 GB/s x18 per B200 [HW]; efficiency: NCCL per-link model 40.1 [NCCL via HW]',
  }),
  // Vendor scale-up fabrics of other accelerators.
  xgmi3: kind({
    id: 'xgmi3',
    label: 'AMD Infinity Fabric xGMI (MI300X)',
    gbps: 64,
    latencyUs: 0.6,
    efficiency: 46.5 / 64,
    family: 'scale-up',
    source: '64 GB/s rated, 7 links full mesh; 45-48 GB/s realised per link [HW]; latency assumed like NVLink',
  }),
  hccs: kind({
    id: 'hccs',
    label: 'Huawei HCCS (Ascend 910B)',
    gbps: 56,
    latencyUs: 0.6,
    efficiency: 0.8,
    family: 'scale-up',
    source:
      '~56 GB/s per link, unofficial, 7 links full mesh [HW]; efficiency 0.8 assumed (NVLink-class SerDes; no public measurement)',
  }),
  'ici-v5e': kind({
    id: 'ici-v5e',
    label: 'Google ICI (TPU v5e)',
    gbps: 45,
    latencyUs: 1,
    efficiency: 0.9,
    family: 'scale-up',
    source: '45 GB/s one-way per link, 4 ports, 2D torus, ~1 us per hop [HW]; efficiency 0.9 assumed',
  }),
  // Networks: Gb/s line rate / 8 per direction.
  'ib-edr': kind({
    id: 'ib-edr',
    label: 'InfiniBand EDR 100 Gb/s',
    gbps: 12.5,
    latencyUs: 1,
    efficiency: 24 / 25,
    family: 'network',
    source: '[IBTA] 100 Gb/s per 4x port (DGX-1 era); efficiency assumed equal to HDR',
  }),
  'ib-hdr': kind({
    id: 'ib-hdr',
    label: 'InfiniBand HDR 200 Gb/s',
    gbps: 25,
    latencyUs: 1,
    efficiency: 24 / 25,
    family: 'network',
    source: '[IBTA] 200 Gb/s per 4x port; one HDR NIC sustains ~24 GB/s [HW]; ~1 us per hop [HW]',
  }),
  'ib-ndr': kind({
    id: 'ib-ndr',
    label: 'InfiniBand NDR 400 Gb/s',
    gbps: 50,
    latencyUs: 1,
    efficiency: 47.5 / 50,
    family: 'network',
    source: '[IBTA] 400 Gb/s; one NDR NIC sustains ~46-49 GB/s [HW]',
  }),
  'ib-xdr': kind({
    id: 'ib-xdr',
    label: 'InfiniBand XDR 800 Gb/s',
    gbps: 100,
    latencyUs: 1,
    efficiency: 47.5 / 50,
    family: 'network',
    source: '[IBTA] 800 Gb/s; efficiency assumed equal to NDR (no public NIC measurement yet)',
  }),
  'roce-200': kind({
    id: 'roce-200',
    label: 'RoCE v2 200 Gb/s (ConnectX-6)',
    gbps: 25,
    latencyUs: 1.5,
    efficiency: 23.5 / 25,
    family: 'network',
    source: 'ConnectX-6 200 Gb/s, ~23.5 GB/s effective [HW]; Ethernet switch hop assumed 1.5 us',
  }),
  'roce-400': kind({
    id: 'roce-400',
    label: 'RoCE v2 400 Gb/s (ConnectX-7)',
    gbps: 50,
    latencyUs: 1.5,
    efficiency: 48.5 / 50,
    family: 'network',
    source: 'ConnectX-7 400 Gb/s, ~48.5 GB/s effective [HW]',
  }),
  'roce-100': kind({
    id: 'roce-100',
    label: 'RoCE v2 100 Gb/s',
    gbps: 12.5,
    latencyUs: 1.5,
    efficiency: 12 / 12.5,
    family: 'network',
    source: '100 Gb/s line rate; NCCL models 100 Gb as 12 GB/s [NCCL via HW]',
  }),
  'iwarp-100': kind({
    id: 'iwarp-100',
    label: 'iWARP 100 Gb/s',
    gbps: 12.5,
    latencyUs: 3,
    efficiency: 0.9,
    family: 'network',
    source:
      '100 Gb/s line rate (e.g. Chelsio T6); efficiency 0.9 and 3 us assumed: RDMA over offloaded TCP adds framing (MPA/DDP) and a TCP stack in the NIC',
  }),
  'efa-100': kind({
    id: 'efa-100',
    label: 'AWS EFA 100 Gb/s',
    gbps: 12.5,
    latencyUs: 5,
    efficiency: 0.9,
    family: 'network',
    pluginTuner: true,
    source:
      "100 Gb/s per adapter; efficiency 0.9 and 5 us per hop assumed (SRD over Ethernet, no public per-link measurement at hand); aws-ofi-nccl's tuner picks the algorithms on p5 and later (src/tuner/nccl_ofi_regions.cpp, is_region_supported)",
  }),
  'eth-10': kind({
    id: 'eth-10',
    label: 'Ethernet 10 GbE (TCP)',
    gbps: 1.25,
    latencyUs: 25,
    efficiency: 0.94,
    family: 'network',
    source: '10 Gb/s line rate; TCP/IP 10-100 us per hop [HW]; 0.94 = 1448/1538 payload per MTU-1500 frame',
  }),
  'eth-25': kind({
    id: 'eth-25',
    label: 'Ethernet 25 GbE (TCP)',
    gbps: 3.125,
    latencyUs: 20,
    efficiency: 0.94,
    family: 'network',
    source: '3.125 GB/s line rate [HW]; 0.94 = TCP payload per MTU-1500 frame',
  }),
  'eth-100': kind({
    id: 'eth-100',
    label: 'Ethernet 100 GbE (TCP)',
    gbps: 12.5,
    latencyUs: 15,
    efficiency: 12 / 12.5,
    family: 'network',
    source: '12.5 GB/s line rate [HW]; NCCL models 100 Gb as 12 [NCCL via HW]',
  }),
  'eth-200': kind({
    id: 'eth-200',
    label: 'Ethernet 200 GbE (TCP)',
    gbps: 25,
    latencyUs: 15,
    efficiency: 0.96,
    family: 'network',
    source: '200 Gb/s line rate; efficiency as 100 GbE',
  }),
  'eth-400': kind({
    id: 'eth-400',
    label: 'Ethernet 400 GbE (TCP)',
    gbps: 50,
    latencyUs: 15,
    efficiency: 0.96,
    family: 'network',
    source: '50 GB/s line rate [HW]; efficiency as 100 GbE',
  }),
  'eth-1': kind({
    id: 'eth-1',
    label: 'Ethernet 1 GbE (TCP)',
    gbps: 0.125,
    latencyUs: 50,
    efficiency: 0.94,
    family: 'network',
    source: '1 Gb/s line rate; 0.94 = TCP payload per MTU-1500 frame; 50 us per hop [HW 10-100 us]',
  }),
  'nvlink-c2c': kind({
    id: 'nvlink-c2c',
    label: 'NVLink-C2C (Grace to Blackwell/Hopper)',
    gbps: 450,
    latencyUs: 0.3,
    efficiency: 0.8,
    family: 'host',
    source: 'NVIDIA Grace Hopper/Blackwell: 900 GB/s bidirectional per superchip link; efficiency assumed as NVLink',
  }),
  'on-package': kind({
    id: 'on-package',
    label: 'on-package (integrated NIC or die-to-die)',
    gbps: 1000,
    latencyUs: 0.1,
    efficiency: 1,
    family: 'host',
    source:
      'a NIC integrated into the accelerator (Ascend 910B RoCE port, TPU ICI); modelled as never the bottleneck (assumption)',
  }),
  // CPU side.
  upi: kind({
    id: 'upi',
    label: 'Intel UPI 2.0 (socket to socket)',
    gbps: 20.8,
    latencyUs: 0.15,
    efficiency: 0.8,
    family: 'host',
    source: 'Intel: 11.2 GT/s x 16 bits = 20.8 GB/s per link per direction; efficiency 0.8 assumed (protocol flits)',
  }),
  'host-memory': kind({
    id: 'host-memory',
    label: 'host memory (DDR5-4800, 8 channels)',
    gbps: 307,
    latencyUs: 0.1,
    efficiency: 0.7,
    family: 'memory',
    source: 'JEDEC DDR5-4800: 38.4 GB/s per channel x 8; ~70% sustained in STREAM-like copies (assumed)',
  }),
  shm: kind({
    id: 'shm',
    label: 'shared memory between ranks (CPU copy)',
    gbps: 12,
    latencyUs: 0.3,
    efficiency: 0.9,
    family: 'memory',
    source:
      'one core copies ~10-12 GB/s (bench/RESULTS.md: a 2-rank 128 MB all-reduce reaches 9.1-9.3 GB/s busbw on a 2-core VM, 2026-11-24)',
  }),
} as const satisfies Record<string, LinkKind>;

export type LinkKindId = keyof typeof LINK_KINDS;
export const LINK_KIND_IDS = Object.keys(LINK_KINDS) as LinkKindId[];

/**
 * Switch chips: the latency of crossing one and whether it can reduce in the switch (NVLink
 * SHARP / "NVLS" on NVSwitch gen3 and later, SHARP on InfiniBand switches).
 */
export interface SwitchKind {
  readonly id: string;
  readonly label: string;
  readonly latencyUs: number;
  readonly inSwitchReduction: boolean;
  /**
   * Fraction of the attached links' sustained rate an in-switch reduction reaches; it is below
   * one because each reduced element needs the switch to read every GPU's contribution.
   */
  readonly reductionEfficiency: number;
  /** Channels a library runs an in-switch reduction on (NCCL's NVLS channel count), 0 without one. */
  readonly reductionChannels: number;
  /** The same when the call spans servers (NCCL's NVLS tree), 0 without one. */
  readonly treeChannels: number;
  readonly source: string;
}

const switchKind = (k: SwitchKind): SwitchKind => k;

export const SWITCH_KINDS = {
  nvswitch1: switchKind({
    id: 'nvswitch1',
    label: 'NVSwitch gen1 (DGX-2, V100)',
    latencyUs: 0.3,
    inSwitchReduction: false,
    reductionEfficiency: 0,
    reductionChannels: 0,
    treeChannels: 0,
    source: '18 NVLink2 ports; latency assumed 0.3 us (an NVLink traversal is ~0.5 us, the switch adds a fraction)',
  }),
  nvswitch2: switchKind({
    id: 'nvswitch2',
    label: 'NVSwitch gen2 (A100)',
    latencyUs: 0.3,
    inSwitchReduction: false,
    reductionEfficiency: 0,
    reductionChannels: 0,
    treeChannels: 0,
    source: '6 per DGX A100, every GPU pair full bandwidth [HW]',
  }),
  nvswitch3: switchKind({
    id: 'nvswitch3',
    label: 'NVSwitch gen3 (H100/H200, NVLink SHARP)',
    latencyUs: 0.3,
    inSwitchReduction: true,
    reductionEfficiency: 0.85,
    reductionChannels: 16,
    treeChannels: 16,
    source:
      "4 per DGX H100, in-switch reduction [HW]; NVLS efficiency 0.85 and 16 NVLS channels are NCCL's Hopper figures (src/graph/tuning.cc nvlsEfficiency, src/transport/nvls.cc NVLS_NCHANNELS_SM90); with them [C2] at 8 GB is predicted within 2%",
  }),
  nvswitch4: switchKind({
    id: 'nvswitch4',
    label: 'NVSwitch gen4 (B200, GB200 NVL72)',
    latencyUs: 0.3,
    inSwitchReduction: true,
    reductionEfficiency: 0.74,
    reductionChannels: 24,
    treeChannels: 32,
    source:
      "NVLink 5 switch with SHARP; NVLS efficiency 0.74 and 24 NVLS channels in one NVLink domain (32 across domains) are NCCL's Blackwell figures (tuning.cc nvlsEfficiency, nvls.cc NVLS_NCHANNELS_SM100_NVL and NVLS_NCHANNELS_SM100)",
  }),
  'ib-switch': switchKind({
    id: 'ib-switch',
    label: 'InfiniBand switch',
    latencyUs: 0.55,
    inSwitchReduction: false,
    reductionEfficiency: 0,
    reductionChannels: 0,
    treeChannels: 0,
    source: '0.5-0.6 us per switch [HW]',
  }),
  'eth-switch': switchKind({
    id: 'eth-switch',
    label: 'Ethernet switch',
    latencyUs: 1,
    inSwitchReduction: false,
    reductionEfficiency: 0,
    reductionChannels: 0,
    treeChannels: 0,
    source: 'cut-through data-centre switch ~1 us (assumed)',
  }),
  'pcie-switch': switchKind({
    id: 'pcie-switch',
    label: 'PCIe switch',
    latencyUs: 0.15,
    inSwitchReduction: false,
    reductionEfficiency: 0,
    reductionChannels: 0,
    treeChannels: 0,
    source: 'PCIe switch port-to-port ~150 ns (Broadcom PEX datasheets class figure, assumed)',
  }),
} as const satisfies Record<string, SwitchKind>;

export type SwitchKindId = keyof typeof SWITCH_KINDS;
export const SWITCH_KIND_IDS = Object.keys(SWITCH_KINDS) as SwitchKindId[];
