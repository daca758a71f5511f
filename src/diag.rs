//! Diagnostics: one type for every stage, converted to `codespan-reporting` only when printed.
//!
//! Every stage reports problems by pushing [`Diagnostic`]s; none prints or stops early. A
//! diagnostic has a stable [`Code`] (`E0xxx` errors, `W0xxx` warnings), a message in rustc's
//! style (lowercase, no final period), labelled [`Span`]s (the primary one says what is wrong
//! *here*) and notes (what was expected). `docs/diagnostics.md` lists every code.
//!
//! [`Sources`] owns the text of every file read in a run and implements codespan's `Files`, so
//! spans stay plain byte ranges until they are rendered.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::{self, Files};
use codespan_reporting::term;

/// Index of a file in [`Sources`], or a shared id bound to one ([`Sources::share`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

impl FileId {
    /// The first shared id: ids from here on are not places in a list.
    pub const FIRST_SHARED: u32 = 1 << 31;

    /// Whether this is a shared id ([`Sources::share`]).
    pub fn is_shared(self) -> bool {
        self.0 >= Self::FIRST_SHARED
    }
}

/// A byte range inside one file. `u32` offsets: [`Sources::add`] refuses files of 4 GiB or more.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub const fn new(start: u32, end: u32) -> Span {
        Span { start, end }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }

    pub fn range(self) -> Range<usize> {
        self.start as usize..self.end as usize
    }

    pub fn in_file(self, file: FileId) -> FileSpan {
        FileSpan { file, span: self }
    }
}

/// A span together with the file it points into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileSpan {
    pub file: FileId,
    pub span: Span,
}

/// Where an item of a project was written. Spans never take part in equality: two project
/// items are equal when they say the same thing, whichever file and format said it (the
/// import-qc round trip relies on it).
#[derive(Clone, Copy, Debug)]
pub struct Loc(pub FileSpan);

impl PartialEq for Loc {
    fn eq(&self, _: &Loc) -> bool {
        true
    }
}

impl Loc {
    pub fn span(self) -> FileSpan {
        self.0
    }
}

/// A value with the span of the text it came from (in a QC or TOML file).
#[derive(Clone, Debug, PartialEq)]
pub struct Spanned<T> {
    pub value: T,
    pub span: Loc,
}

impl<T> Spanned<T> {
    pub fn new(value: T, span: FileSpan) -> Self {
        Spanned {
            value,
            span: Loc(span),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Note,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

macro_rules! codes {
    ($( $(#[doc = $doc:literal])* $name:ident = $text:literal, $sev:ident; )*) => {
        /// Stable diagnostic codes. The text of a code never changes once released; a retired
        /// code is not reused. Each variant's doc line is its one-line meaning.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Code {
            $( $(#[doc = $doc])* $name, )*
        }

        impl Code {
            /// Every code, in documentation order.
            pub const ALL: &'static [Code] = &[ $( Code::$name, )* ];

            /// The code as printed, e.g. `E0130`.
            pub fn as_str(self) -> &'static str {
                match self { $( Code::$name => $text, )* }
            }

            /// The severity a diagnostic with this code has.
            pub fn severity(self) -> Severity {
                match self { $( Code::$name => Severity::$sev, )* }
            }

            /// The one-line meaning of the code (its doc comment).
            pub fn summary(self) -> &'static str {
                match self { $( Code::$name => concat!($($doc),*).trim_ascii(), )* }
            }
        }
    };
}

codes! {
    // --- files ------------------------------------------------------------------------------
    /// a file could not be read
    FileUnreadable = "E0001", Error;
    /// a file contains bytes that are not text (NUL or invalid UTF-8)
    NotText = "E0002", Error;
    /// a file is empty or holds only comments and blank lines
    EmptyFile = "E0003", Error;
    /// a file is too large to be read (4 GiB or more)
    FileTooLarge = "E0004", Error;
    /// mdlc found a bug in itself (for example a written file that does not read back the same)
    InternalError = "E0005", Error;
    /// a file is not UTF-8 (and has no NUL byte): it is read as Latin-1
    NotUtf8 = "W0001", Warning;
    /// the target engine was inferred from the commands a QC uses
    TargetInferred = "N0001", Note;

    // --- SMD structure ----------------------------------------------------------------------
    /// the `version` line gives a version other than 1
    SmdBadVersion = "E0101", Error;
    /// a section keyword that SMD does not have
    SmdUnknownSection = "E0102", Error;
    /// a section is not closed by `end`
    SmdUnclosedSection = "E0103", Error;
    /// a section appears twice in one file
    SmdDuplicateSection = "E0104", Error;
    /// a line at the top level that is neither a section keyword nor a comment
    SmdUnexpectedLine = "E0105", Error;
    /// a required section (`nodes`, `skeleton`) is missing
    SmdMissingSection = "E0106", Error;
    /// the file has no `version` line
    SmdMissingVersion = "W0101", Warning;
    /// `end` at the top level, where no section is open
    SmdStrayEnd = "W0102", Warning;

    // --- values -----------------------------------------------------------------------------
    /// a line has the wrong number of values
    SmdValueCount = "E0110", Error;
    /// a value is not a well-formed number
    SmdMalformedNumber = "E0111", Error;
    /// a number is out of range (overflows, or is not finite)
    SmdNumberOutOfRange = "E0112", Error;
    /// a bone name is not in double quotes, or its quote is not closed
    SmdBadName = "E0113", Error;

    // --- nodes ------------------------------------------------------------------------------
    /// bone indices are out of order, duplicated, or skip a number
    SmdBoneIndexOrder = "E0120", Error;
    /// two bones have the same name (names are compared without regard to case)
    SmdDuplicateBoneName = "E0121", Error;
    /// a bone's parent is not a bone of the file
    SmdParentOutOfRange = "E0122", Error;
    /// a bone is its own parent
    SmdParentIsSelf = "E0123", Error;
    /// parents form a cycle
    SmdParentCycle = "E0124", Error;
    /// a bone's parent is listed after it
    SmdParentAfterChild = "W0120", Warning;

    // --- skeleton and vertex animation frames ---------------------------------------------
    /// a frame line comes before any `time` line
    SmdFrameLineBeforeTime = "E0130", Error;
    /// a frame names a bone that `nodes` does not declare
    SmdUnknownBone = "E0131", Error;
    /// a negative frame number
    SmdNegativeFrame = "E0132", Error;
    /// a frame gives a bone again, or a later `time` block re-opens a frame, with another value
    SmdFrameValueReplaced = "W0130", Warning;
    /// bones declared in `nodes` are missing from the first frame of the skeleton
    SmdBoneMissingFromFirstFrame = "W0131", Warning;
    /// frame numbers skip some frames
    SmdFrameGap = "W0132", Warning;
    /// a vertex animation index is negative
    SmdNegativeVertexIndex = "E0133", Error;
    /// the `skeleton` section has no frame
    SmdNoFrames = "E0134", Error;
    /// frame numbers span more frames than mdlc can hold
    SmdTooManyFrames = "E0135", Error;

    // --- triangles --------------------------------------------------------------------------
    /// a vertex names a bone that `nodes` does not declare
    SmdVertexBoneOutOfRange = "E0140", Error;
    /// the link count of a vertex does not match the bone/weight pairs that follow
    SmdLinkCountMismatch = "E0141", Error;
    /// a link names a bone that `nodes` does not declare
    SmdLinkBoneOutOfRange = "E0142", Error;
    /// a weight outside 0..1
    SmdWeightOutOfRange = "E0143", Error;
    /// a triangle has fewer than three vertices
    SmdIncompleteTriangle = "E0144", Error;
    /// a vertex line where a material name is expected (a triangle with a fourth vertex)
    SmdExtraVertex = "E0145", Error;
    /// the weights of a vertex do not add up to 1
    SmdWeightSum = "W0140", Warning;
    /// a triangle with an empty material line is dropped
    SmdEmptyMaterial = "W0141", Warning;
    /// a vertex lists the same bone in two links
    SmdDuplicateLink = "W0142", Warning;

    // --- DMX (E0150-E0159, W0150-W0159) --------------------------------------------------
    /// a DMX file could not be read (its header or its binary or text encoding is broken)
    DmxUnreadable = "E0150", Error;
    /// a DMX file reads, but its content is not a model mdlc can use
    DmxBadModel = "E0151", Error;
    // (W0150, "the flex shapes of a DMX mesh are not read", is retired: they are read)

    // --- GoldSrc skeleton and animation (E0520-E0539, W0520-W0539) ------------------------
    // (formats::goldsrc::animation adds its codes here)
    /// a bone name does not fit the 32-byte name field of a GoldSrc bone
    GsBoneNameTooLong = "E0520", Error;
    /// a sequence name does not fit the 32-byte label of a GoldSrc sequence
    GsSequenceNameTooLong = "E0521", Error;
    /// a bone controller drives a motion type other than X, Y, Z, XR, YR or ZR
    GsControllerType = "E0522", Error;
    /// a sequence has more events than GoldSrc allows (1023)
    GsTooManyEvents = "E0523", Error;
    /// a sequence has more pivots than GoldSrc allows (255)
    GsTooManyPivots = "E0524", Error;
    /// the animation data of one bone of a sequence is larger than 64 KiB
    GsAnimationTooLarge = "E0525", Error;
    /// an animation has no frame in the frame range GoldSrc reads (0 to 2047 by default)
    GsNoFrames = "E0526", Error;
    /// an event id that is not a number
    GsEventId = "E0527", Error;
    /// a node number outside 0 to 100, or node 0 in a transition between two nodes
    GsTransitionNode = "E0528", Error;
    /// an event outside the sequence's frames is moved to its first or last frame
    GsEventClamped = "W0520", Warning;
    /// the blends of a sequence have different numbers of frames
    GsBlendFrames = "W0521", Warning;

    // --- GoldSrc geometry and textures (E0500-E0519, W0500-W0519) ---------------------------
    // (formats::goldsrc::geometry adds its codes here)
    /// a texture is in none of the folders searched for it
    GsTextureNotFound = "E0500", Error;
    /// a texture that is not a `.bmp` file
    GsTextureNotBmp = "E0501", Error;
    /// a BMP file that cannot be read
    GsBmpUnreadable = "E0502", Error;
    /// a BMP file whose headers are truncated or invalid
    GsBmpHeader = "E0503", Error;
    /// a BMP that is not 8 bits per pixel
    GsBmpNot8Bit = "E0504", Error;
    /// a compressed BMP
    GsBmpCompressed = "E0505", Error;
    /// a BMP whose palette is truncated or has more than 256 colours
    GsBmpPalette = "E0506", Error;
    /// a BMP whose pixel data is shorter than the image or whose size fields are wrong
    GsBmpPixels = "E0507", Error;
    /// a texture, cropped to the texels the model uses, is larger than GoldSrc allows
    GsTextureTooLarge = "E0508", Error;
    /// a model has more than 2048 unique vertices
    GsTooManyVertices = "E0509", Error;
    /// a model has more than 2048 unique normals
    GsTooManyNormals = "E0510", Error;
    /// a model uses more than 256 textures
    GsTooManyMeshes = "E0511", Error;
    /// a texture name does not fit the 64-byte name field
    GsTextureNameTooLong = "E0512", Error;
    /// a texture no mesh uses has no used texture to take its size from
    GsTextureNoRange = "E0513", Error;
    /// a texture found only under another case of its name
    GsTextureOtherCase = "W0500", Warning;
    /// a texture named without `.bmp` is read from `NAME.bmp`
    GsTextureAddedExtension = "W0501", Warning;

    // --- Source back end: geometry (E0600-E0649, W0600-W0649) --------------------------------
    /// a model has more bones than Source allows (128)
    SourceTooManyBones = "E0600", Error;
    /// two IK chains ask one bone to point its X axis at two different children
    SourceRealignTwoChildren = "E0601", Error;
    /// vertices lost bone weights: Source keeps at most 3 links per vertex and drops links under 0.05
    SourceWeightsPruned = "W0600", Warning;
    /// a model has 65,536 vertices or more; its meshes were split but Valve's tools refuse such models
    SourceModelTooManyVertices = "W0601", Warning;

    // --- Source back end: animations and sequences (E0620-E0649, W0620-W0649) ----------------
    /// a sequence, animation, pose parameter or weight list named by another one does not exist
    SourceAnimUnknownName = "E0620", Error;
    /// a frame number (an event's, a `subtract` reference's) is outside its animation
    SourceEventFrame = "E0621", Error;
    /// the model exceeds a limit of the animation side (pose parameters, nodes, events, option length)
    SourceAnimLimit = "E0622", Error;
    /// `calcblend` measures no change of its attachment across the blend
    SourceCalcBlendFailed = "E0623", Error;
    /// the blend animations of one sequence have different IK rules
    SourceIkRuleMismatch = "E0624", Error;
    /// an IK rule's value is missing or not a number
    SourceIkRuleInvalid = "E0625", Error;
    /// an animation or sequence option is read but not applied yet
    SourceAnimCommandIgnored = "W0620", Warning;
    /// an event's frame is negative (written as a negative cycle, which never fires)
    SourceEventNegativeFrame = "W0621", Warning;
    /// `$bonesaveframe` names a bone the model does not have: skipped
    SourceSaveFrameUnknownBone = "W0624", Warning;
    /// an IK rule's type word is not one Valve's compiler knows: the rule has no type
    SourceIkRuleNoType = "W0623", Warning;
    /// `$animblocksize` asks for blocks too small to fit the animations in 255; the smallest
    /// size that fits is taken
    SourceAnimBlocksGrown = "W0625", Warning;

    // --- Source back end: collision models (E0660-E0679, W0660-W0679) ------------------------
    /// a collision model has no solid: no triangles, or every piece is flat
    PhysicsEmpty = "E0660", Error;
    /// a collision command names a bone the collision mesh does not have, or one without a solid
    PhysicsUnknownBone = "E0661", Error;
    /// a concave collision model has more convex pieces than `$maxconvexpieces` allows
    PhysicsTooManyPieces = "E0662", Error;
    /// a solid exceeds a limit of the `.phy` format (triangles per piece, points per solid)
    PhysicsLimit = "E0663", Error;
    /// a collision command's argument is missing or not a number
    PhysicsArgument = "E0664", Error;
    /// a piece of a concave collision model is flat: the whole mesh's hull is used instead
    PhysicsFlatPiece = "W0660", Warning;
    /// `$automass` with a surface property whose density mdlc does not know
    PhysicsUnknownDensity = "W0661", Warning;
    /// more than 20 convex pieces without `$maxconvexpieces`: the whole mesh's hull is used
    PhysicsCostly = "W0662", Warning;
    /// a connected part of a concave collision mesh is not convex: its hull fills its hollows
    PhysicsPartNotConvex = "W0663", Warning;

    // --- Source inspect (E0650-E0659) ----------------------------------------------------------
    // (driver::inspect and formats::source::pose add their codes here)
    /// `mdlc inspect --pose` names no animation or sequence of the model
    InspectUnknownAnimation = "E0650", Error;
    /// `mdlc inspect --frame` is outside the frames of the animation
    InspectFrameOutOfRange = "E0651", Error;
    /// `mdlc inspect --bone` names no bone of the model
    InspectUnknownBone = "E0652", Error;
    /// `mdlc inspect --pose` cannot decode the animation (external `.ani` data, broken record chain)
    InspectPoseUndecodable = "E0653", Error;
    /// `mdlc inspect --pose` was given for a model that is not a Source model
    InspectPoseNotSource = "E0654", Error;
    /// `mdlc inspect --flex` names a flex the model does not have
    InspectUnknownFlex = "E0655", Error;

    // --- GoldSrc compile, build, inspect (E0540-E0569, W0540-W0569) ---------------------------
    // (formats::goldsrc::compile and driver build/inspect add their codes here)
    /// the model exceeds a GoldSrc limit (bones, vertices, meshes, textures, sequences, …)
    GsLimit = "E0541", Error;
    /// a name the engine looks up (event option, sequence group label or file) does not fit its field
    GsNameTooLong = "E0542", Error;
    /// a controller or attachment names a bone that is not in the GoldSrc skeleton
    GsBoneNotInSkeleton = "E0543", Error;
    /// a GoldSrc model without any texture (no triangle) and without `$externaltextures`
    GsNoTextures = "E0544", Error;
    /// a bone controller index other than 0 to 3 or 4 (`mouth`)
    GsControllerIndex = "E0545", Error;
    /// a file given to `mdlc inspect` is not a GoldSrc model
    InspectNotMdl = "E0546", Error;
    /// a model read by `mdlc inspect` (GoldSrc, or Source with its VVD and VTX) breaks an invariant of the format
    InspectInvariant = "E0547", Error;
    /// a skeleton rotation too large for Valve's HL1 compiler to wrap into range
    GsRotationTooLarge = "E0548", Error;
    /// a name is cut to fit its field (model, body part or header name)
    GsNameCut = "W0540", Warning;
    /// a bone without vertices is kept because a controller or attachment needs it
    GsBoneWithoutVertices = "W0541", Warning;
    /// parts of the output path that would leave the `-o` folder are dropped
    OutputPathOutside = "W0542", Warning;
    /// a GoldSrc model without `$modelname` is named after its project file
    GsNoModelName = "W0543", Warning;
    /// Valve's HL1 compiler would strip a `$modelname` written with `\` elsewhere than mdlc's output path
    GsHeaderNameDiffers = "W0544", Warning;
    /// a GoldSrc model without any sequence
    GsNoSequence = "W0545", Warning;
    /// a GoldSrc `$sequencegroup` that no sequence belongs to
    GsEmptySequenceGroup = "W0546", Warning;
    /// a GoldSrc model with more than 4 attachments, which Valve's Half-Life client refuses
    GsManyAttachments = "W0547", Warning;

    // --- build systems: `mdlc build` options (E0800-E0819) ---------------------------------------
    /// `--game` names a game folder for Source models; the project is a GoldSrc one
    GameWithGoldSrc = "E0800", Error;
    /// two projects of one `mdlc build` or `mdlc ninja` write the same model file
    SameOutput = "E0801", Error;

    // --- QC tokens, includes, macros (E0200-E0219, W0200-W0219) ---------------------------------
    // (qc::tokens adds its codes here)
    /// a quoted string is not closed before the end of the file
    QcUnterminatedQuote = "E0200", Error;
    /// a `/*` block comment is not closed before the end of the file
    QcUnterminatedComment = "E0201", Error;
    /// `$include` has no file name on its line
    QcIncludeNoFile = "E0202", Error;
    /// an included file does not exist
    QcIncludeNotFound = "E0203", Error;
    /// a file includes itself, directly or through other files
    QcIncludeCycle = "E0204", Error;
    /// includes or macro expansions are nested more than 16 deep
    QcNestingTooDeep = "E0205", Error;
    /// a `$definemacro` or `$definevariable` line lacks its name or value
    QcDefineIncomplete = "E0206", Error;
    /// a macro is invoked with fewer arguments than it has parameters
    QcMacroMissingArgs = "E0207", Error;
    /// a macro body uses a `$word$` that is neither a parameter nor a variable
    QcMacroUnknownParam = "E0208", Error;
    /// a macro invokes itself, directly or through other macros
    QcMacroRecursive = "E0209", Error;
    /// `$definemacro` inside a macro body
    QcDefineInMacro = "E0210", Error;
    /// an included file was found only under another case
    QcIncludeCase = "W0200", Warning;
    /// a `$definemacro` line does not end with `\\`, so the macro has an empty body
    QcMacroNoBody = "W0201", Warning;
    /// a macro or variable is defined a second time (the first definition is kept)
    QcRedefined = "W0202", Warning;
    /// a quoted string spans several lines (most often a missing closing quote)
    QcQuoteSpansLines = "W0203", Warning;
    /// `//` or `/*` inside a token, where it does not start a comment
    QcCommentInToken = "W0204", Warning;
    /// a macro parameter written inside a quoted token, which QC does not replace
    QcParamInQuotes = "W0205", Warning;
    /// tokens after a macro call's arguments continue the expansion's last command
    QcMacroTrailingTokens = "W0206", Warning;

    // --- QC commands (E0220-E0299, W0220-W0299) ----------------------------------------------
    // (qc::commands adds its codes here)
    /// a `$` command that neither QC dialect has
    QcUnknownCommand = "E0220", Error;
    /// a token at the top level of a QC that is not a command ("bad command")
    QcBadCommand = "E0221", Error;
    /// a word where a number is needed
    QcExpectedNumber = "E0222", Error;
    /// a command or option is missing an argument at the end of its line
    QcMissingArgument = "E0223", Error;
    /// a `{` is never closed ("missing }")
    QcUnclosedBrace = "E0224", Error;
    /// a `}` closes no `{` ("missing {")
    QcUnopenedBrace = "E0225", Error;
    /// a block command is not followed by `{`
    QcExpectedBrace = "E0226", Error;
    /// an option keyword the command does not have
    QcUnknownOption = "E0227", Error;
    /// an unknown axis, motion type, activity or render mode
    QcUnknownKeyword = "E0228", Error;
    /// a second `$cd` in one model
    QcTwoCd = "E0229", Error;
    /// a sequence or animation name used twice (Source)
    QcDuplicateName = "E0230", Error;
    /// a `$sequence` names no animation
    QcNoAnimation = "E0231", Error;
    /// a name that refers to nothing declared before it (`$append` target, `cmdlist`)
    QcUnknownName = "E0232", Error;
    /// a value out of its range (frame rate, frame range, blend grid, joint limits, LOD distance)
    QcBadValue = "E0233", Error;
    /// an option that is not allowed where it is written
    QcOptionNotAllowed = "E0234", Error;
    /// extra arguments after a command (Source dialect)
    QcExtraArgument = "E0235", Error;
    /// a line of a `$model` block that is not a face command
    QcFaceUnknownCommand = "E0236", Error;
    /// a face command (eyeball, eyelid, mouth, flex …) with a missing or wrong argument
    QcFaceArgument = "E0237", Error;
    /// a flex rule whose expression does not parse
    QcFlexExpression = "E0238", Error;
    /// a command mdlc reads but does not build yet
    QcNotSupported = "W0220", Warning;
    /// the `{` of a same-line block is on the next line
    QcBraceOnNextLine = "W0221", Warning;
    /// two sequences with the same name in a Half-Life QC
    QcDuplicateSequenceHl1 = "W0222", Warning;
    /// a Half-Life command not written in lower case
    QcCommandCase = "W0223", Warning;
    /// a number followed by other characters, read up to them
    QcNumberTrailing = "W0224", Warning;
    /// arguments that are read and ignored
    QcIgnoredArgument = "W0225", Warning;
    /// a command that has no effect in this dialect
    QcNoEffect = "W0226", Warning;
    /// a second `blend` in a Half-Life sequence replaces the first
    QcBlendReplaced = "W0227", Warning;
    /// an unknown command in a collision block
    QcUnknownCollisionCommand = "W0228", Warning;
    /// a command of the other QC dialect
    QcOtherDialect = "W0229", Warning;
    /// a weight list name defined twice
    QcDuplicateWeightList = "W0230", Warning;
    /// a Half-Life `$sequence` word is read as an option because it starts like one
    QcOptionByPrefix = "W0231", Warning;
    /// a Half-Life keyword that Valve's tool matches only in lower case is written in another case
    QcKeywordCase = "W0232", Warning;
    /// a sequence names a pose parameter no `$poseparameter` declared before it (made there)
    QcPoseParameterUndeclared = "W0233", Warning;
    /// `$poseparameter name` without a range (the range comes from the blends)
    QcPoseParameterNoRange = "W0234", Warning;
    /// `rotate` of `$attachment` with fewer than three angles (the missing ones are 0)
    QcAttachmentFewAngles = "W0235", Warning;
    /// a second `$ikchain` of a name (ignored, as Valve's compiler ignores it)
    QcDuplicateIkChain = "W0236", Warning;
    /// a word in a `$jigglebone` block that is not a group or property of it (skipped)
    QcJiggleUnknown = "W0237", Warning;
    /// `$insertbone child subparent parent`: no bone is inserted; `child` is re-parented to
    /// `parent`, as in Valve's 2006 compiler
    QcInsertBoneNotInserted = "W0238", Warning;
    /// `$collisiontext` in a model without a collision model: nothing to add it to, as in
    /// Valve's compiler
    QcCollisionTextUnused = "W0239", Warning;
    /// `$cd` names a Windows folder that cannot be on this machine: read from the QC's folder or
    /// the folder above it whose path ends the same way
    QcCdRerooted = "W0240", Warning;
    /// `$declareanimation`: an animation with no frames, which neither Valve's 2006 compiler
    /// nor the engine can use; ignored
    QcDeclaredAnimationIgnored = "W0241", Warning;

    // --- TOML project files (E0300-E0349, W0300-W0349) ---------------------------------------
    // (project::toml adds its codes here)
    /// a `model.toml` is not valid TOML
    TomlSyntax = "E0300", Error;
    /// a key that the project format does not have
    TomlUnknownKey = "E0301", Error;
    /// a value has the wrong type (a string where a number is expected, …)
    TomlWrongType = "E0302", Error;
    /// a required key is missing from a table
    TomlMissingKey = "E0303", Error;
    /// a word that is not one of the allowed values (`target`, `mode`, …)
    TomlUnknownValue = "E0304", Error;
    /// a number out of range (does not fit, or not finite)
    TomlNumberOutOfRange = "E0305", Error;
    /// an array has the wrong number of elements
    TomlWrongLength = "E0306", Error;
    /// two keys that cannot be used together, or a key that needs another one
    TomlConflictingKeys = "E0307", Error;

    // --- building the model from a project (E0400-E0499, W0400-W0499) -------------------------
    // (ir::build adds its codes here)
    /// a file the project names does not exist
    BuildFileMissing = "E0401", Error;
    /// a command names a bone that is not in the model's skeleton
    BuildUnknownBone = "E0402", Error;
    /// two files of a GoldSrc model give one bone different parents
    BuildIllegalParent = "E0403", Error;
    /// a sequence refers to an animation that does not exist
    BuildUnknownAnimation = "E0404", Error;
    /// an animation's frame range does not fit its file
    BuildBadFrameRange = "E0405", Error;
    /// `replacemodel` names a model that was not loaded
    BuildUnknownModel = "E0406", Error;
    /// a sequence's animations do not fill its blend grid
    BuildBlendGrid = "E0407", Error;
    /// two sequences of a Source model have the same name
    BuildDuplicateSequence = "E0408", Error;
    /// `$hierarchy` or `$definebone` makes a bone its own ancestor
    BuildBoneCycle = "E0409", Error;
    /// a sequence has no animation
    BuildNoAnimation = "E0410", Error;
    /// a body group without any model or `blank`
    BuildEmptyBodyGroup = "E0411", Error;
    /// a model with no body part, no sequence and no `$includemodel`: nothing to build
    BuildEmptyModel = "E0412", Error;
    /// the bone an `$ikchain` names has no parent or no grandparent
    BuildIkChainShort = "E0413", Error;
    /// a line of a `$proceduralbones` file cannot be read
    BuildProceduralSyntax = "E0423", Error;
    /// a bone or attachment a procedural bone depends on is not in the model, or not where the file puts it
    BuildProceduralBone = "E0424", Error;
    /// a `$proceduralbones` file does not exist: the model is built without it, as Valve's compiler does
    BuildProceduralMissing = "W0414", Warning;
    /// a procedural bone is not in the model: its rule is dropped, as Valve's compiler drops it
    BuildProceduralUnused = "W0415", Warning;
    /// a `$jigglebone` names a bone the model does not have (dropped)
    BuildJiggleUnused = "W0416", Warning;
    /// a `$jigglebone` bone already has a procedural rule (the jiggle rule replaces it)
    BuildJiggleReplaces = "W0417", Warning;
    /// `$jigglebone` groups the engine does not use together (`is_rigid` with `is_flexible`,
    /// `has_base_spring` with `is_boing`)
    BuildJiggleConflict = "W0418", Warning;
    /// an `is_flexible` or `is_rigid` jiggle group without `length`
    BuildJiggleNoLength = "W0419", Warning;
    /// a Source `$attachment` with an empty bone name, attached to the root bone
    BuildAttachmentNoBone = "W0420", Warning;
    /// a DMX mesh's flex shapes are built, but the controllers and rules later compilers make
    /// of its combination operator's controls (without `noautodmxrules`) are not
    BuildDmxRulesNotMade = "W0421", Warning;
    /// `$ikautoplaylock` names an IK chain no `$ikchain` defines
    BuildUnknownIkChain = "E0414", Error;
    /// an eyeball or mouth names a bone that is not in the skeleton
    BuildFaceBone = "E0415", Error;
    /// an eyeball's material is on no triangle of its model
    BuildEyeballMaterial = "E0416", Error;
    /// an eyelid target lies outside its eyeball
    BuildEyelidRange = "E0417", Error;
    /// a flex rule names a controller no `flexcontroller` declares
    BuildFlexUnknownController = "E0418", Error;
    /// a flex rule is for, or names, a flex the model does not have
    BuildFlexUnknownFlex = "E0419", Error;
    /// more flex descriptions, controllers, rules or rule operations than the engine reads
    BuildFaceLimit = "E0420", Error;
    /// a VTA file that is not one, or whose shapes move vertices its base shape lacks
    BuildVtaMismatch = "E0421", Error;
    /// a flex or eyelid names a VTA frame the file does not have
    BuildFlexFrame = "E0422", Error;
    /// a file the project names exists only with another case
    BuildFileOtherCase = "W0401", Warning;
    /// a texture group names a material that no mesh uses
    BuildUnusedGroupMaterial = "W0402", Warning;
    /// a texture group after the first makes no skins
    BuildExtraTextureGroup = "W0403", Warning;
    /// two sequences of a GoldSrc model have the same name
    BuildDuplicateSequenceGoldSrc = "W0404", Warning;
    /// a GoldSrc command that Valve's tool never uses names a bone that is not in the skeleton
    BuildUnusedBoneName = "W0405", Warning;
    /// an animation's frame range reaches past its file's frames
    BuildFrameRangeClamped = "W0406", Warning;
    /// a reference mesh file has no triangles
    BuildNoTriangles = "W0407", Warning;
    /// texture group rows have different lengths
    BuildTextureGroupRows = "W0408", Warning;
    /// a GoldSrc animation has frames at times Valve's HL1 compiler does not read (below 0, above 2047)
    BuildFramesNotRead = "W0409", Warning;
    /// a GoldSrc `$mirrorbone` comes after SMD files Valve's HL1 compiler has already read
    BuildMirrorAfterFiles = "W0410", Warning;
    /// a GoldSrc `$texturegroup` comes before every `$body`
    BuildTextureGroupFirst = "W0411", Warning;
    /// an eyelid that names no eyeball of its model
    BuildEyelidNoEyeball = "W0412", Warning;
    /// moving vertices of a VTA that no vertex of the reference mesh matches
    BuildVtaUnmatched = "W0413", Warning;
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A labelled span.
#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub at: FileSpan,
    pub message: String,
    pub primary: bool,
}

/// Everything one run found: the files it read (for rendering) and every diagnostic.
#[derive(Debug, Default)]
pub struct Report {
    pub sources: Sources,
    pub diagnostics: Vec<Diagnostic>,
    /// Files that could not be read at all (I/O failures: exit code 2).
    pub io_failures: usize,
    /// Binary files read (by `inspect`), which are not in `sources`.
    pub binary_files: usize,
}

impl Report {
    pub fn error_count(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.is_error()).count()
    }

    /// How many files were checked (read or not).
    pub fn sources_count(&self) -> usize {
        self.sources.len() + self.io_failures + self.binary_files
    }

    pub fn warning_count(&self) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Warning)
            .count()
    }
}

/// One problem found in the input.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: Code,
    pub message: String,
    /// The first label is the primary one (the exact token at fault).
    pub labels: Vec<Label>,
    pub notes: Vec<String>,
    /// The file a diagnostic without labels is about (for example an unreadable file).
    pub file_name: Option<String>,
}

impl Diagnostic {
    /// A diagnostic with the code's own severity and a primary label.
    pub fn new(
        code: Code,
        message: impl Into<String>,
        at: FileSpan,
        label: impl Into<String>,
    ) -> Self {
        Diagnostic {
            severity: code.severity(),
            code,
            message: message.into(),
            labels: vec![Label {
                at,
                message: label.into(),
                primary: true,
            }],
            notes: Vec::new(),
            file_name: None,
        }
    }

    /// A diagnostic about a whole file, with no span (for example an unreadable file).
    pub fn about_file(
        code: Code,
        message: impl Into<String>,
        file_name: impl Into<String>,
    ) -> Self {
        Diagnostic {
            severity: code.severity(),
            code,
            message: message.into(),
            labels: Vec::new(),
            notes: Vec::new(),
            file_name: Some(file_name.into()),
        }
    }

    /// [`Code::FileUnreadable`] for a file named on the command line (no span to point at).
    pub fn unreadable(path: &std::path::Path, why: impl fmt::Display) -> Self {
        let name = path.display().to_string();
        Diagnostic::about_file(
            Code::FileUnreadable,
            format!("cannot read `{name}`: {why}"),
            name,
        )
    }

    /// [`Code::FileUnreadable`] for a file a project names at `at`.
    pub fn unreadable_at(
        path: &std::path::Path,
        why: impl fmt::Display,
        at: FileSpan,
        label: &str,
    ) -> Self {
        Diagnostic::new(
            Code::FileUnreadable,
            format!("cannot read `{}`: {why}", path.display()),
            at,
            label,
        )
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    pub fn with_secondary(mut self, at: FileSpan, label: impl Into<String>) -> Self {
        self.labels.push(Label {
            at,
            message: label.into(),
            primary: false,
        });
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The primary span, if the diagnostic has one.
    pub fn primary(&self) -> Option<FileSpan> {
        self.labels.iter().find(|l| l.primary).map(|l| l.at)
    }

    fn to_codespan(&self) -> cs::Diagnostic<FileId> {
        let severity = match self.severity {
            Severity::Error => cs::Severity::Error,
            Severity::Warning => cs::Severity::Warning,
            Severity::Note => cs::Severity::Note,
        };
        let labels = self
            .labels
            .iter()
            .map(|l| {
                let style = if l.primary {
                    cs::LabelStyle::Primary
                } else {
                    cs::LabelStyle::Secondary
                };
                cs::Label::new(style, l.at.file, l.at.span.range()).with_message(l.message.clone())
            })
            .collect();
        cs::Diagnostic::new(severity)
            .with_code(self.code.as_str())
            .with_message(self.message.clone())
            .with_labels(labels)
            .with_notes(self.notes.clone())
    }
}

/// What identifies a file's contents on disk, taken when it was read: its length and time of
/// last change. A text let go after parsing ([`Sources::evict`]) is read again for a
/// diagnostic only when both still match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStamp {
    pub len: u64,
    pub modified: std::time::SystemTime,
}

impl FileStamp {
    /// The stamp of the file at `path` now, if it can be read.
    pub fn of(path: &Path) -> Option<Self> {
        let m = std::fs::metadata(path).ok()?;
        Some(Self {
            len: m.len(),
            modified: m.modified().ok()?,
        })
    }
}

/// A text let go after parsing, to be read again from disk if a diagnostic cites it.
#[derive(Debug)]
struct Evicted {
    path: PathBuf,
    stamp: FileStamp,
    /// The text read again; empty when the file changed or is gone (rendering then shows no
    /// source, see [`SourceFile::text_lost`]).
    text: OnceLock<String>,
}

impl Evicted {
    fn reload(&self) -> String {
        if FileStamp::of(&self.path) != Some(self.stamp) {
            return String::new();
        }
        std::fs::read(&self.path)
            .ok()
            .filter(|b| b.len() as u64 == self.stamp.len)
            .and_then(|b| String::from_utf8(b).ok())
            .unwrap_or_default()
    }
}

/// One file's text, with its line starts for line/column lookups.
#[derive(Debug)]
pub struct SourceFile {
    pub name: String,
    text: String,
    /// Set when the text was let go after a clean parse ([`Sources::evict`]).
    evicted: Option<Box<Evicted>>,
    /// Where a QC `$include` first read this file (see [`Sources::reading_order`]).
    included_at: Option<FileSpan>,
    /// Byte offsets of the line starts, found on the first line/column lookup: a clean build
    /// renders no diagnostic, so most files never need them.
    line_starts: OnceLock<Vec<u32>>,
}

impl SourceFile {
    fn new(name: String, text: String) -> Self {
        Self {
            name,
            text,
            evicted: None,
            included_at: None,
            line_starts: OnceLock::new(),
        }
    }

    /// The file's text; an evicted text is read again from disk on first use.
    pub fn text(&self) -> &str {
        match &self.evicted {
            None => &self.text,
            Some(e) => e.text.get_or_init(|| e.reload()),
        }
    }

    /// The text's length in bytes, without reading an evicted text again.
    pub fn len(&self) -> usize {
        match &self.evicted {
            None => self.text.len(),
            Some(e) => e.stamp.len as usize,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether an evicted text could not be read again as it was (the file changed or is gone):
    /// its spans can no longer be shown.
    fn text_lost(&self) -> bool {
        self.evicted
            .as_ref()
            .is_some_and(|e| self.text().len() as u64 != e.stamp.len)
    }

    /// Byte offsets where the lines start: 0, then one past every `\n`.
    fn line_starts(&self) -> &[u32] {
        self.line_starts.get_or_init(|| {
            let mut starts = vec![0u32];
            starts.extend(memchr::memchr_iter(b'\n', self.text().as_bytes()).map(|i| i as u32 + 1));
            starts
        })
    }

    /// 0-based line index of a byte offset.
    pub fn line_index(&self, offset: u32) -> usize {
        match self.line_starts().binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        }
    }

    /// 1-based (line, column) of a byte offset; the column counts characters.
    pub fn line_col(&self, offset: u32) -> (usize, usize) {
        let text = self.text();
        let offset = offset.min(text.len() as u32);
        let line = self.line_index(offset);
        let start = self.line_starts().get(line).copied().unwrap_or(0) as usize;
        let mut end = offset as usize;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let col = text.get(start..end).map_or(0, |s| s.chars().count());
        (line + 1, col + 1)
    }
}

/// Every file read in one run. Stages get `&str` slices of it and report [`FileSpan`]s.
///
/// A file's id is its place in the list, or a *shared* id ([`FileId::is_shared`]) bound to a
/// place with [`Sources::share`]: the projects of one batch that read the same SMD file use
/// one parse of it (`crate::load::shared::SharedSmds`), whose spans carry one id in all of them.
#[derive(Debug, Default)]
pub struct Sources {
    files: Vec<SourceFile>,
    /// Shared id -> place in `files`.
    shared: std::collections::HashMap<u32, u32>,
}

/// Largest file [`Sources`] accepts: spans are `u32` byte offsets.
pub const MAX_FILE_LEN: usize = u32::MAX as usize - 1;

/// Text longer than [`MAX_FILE_LEN`] cut there (at a character boundary).
fn cut_to_fit(mut text: String) -> String {
    if text.len() > MAX_FILE_LEN {
        let mut cut = MAX_FILE_LEN;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    text
}

impl Sources {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a file's text. Text longer than [`MAX_FILE_LEN`] is cut there; callers check the
    /// length first and report [`Code::FileTooLarge`].
    pub fn add(&mut self, name: impl Into<String>, text: String) -> FileId {
        let id = FileId(self.files.len() as u32);
        self.files
            .push(SourceFile::new(name.into(), cut_to_fit(text)));
        id
    }

    /// Binds the shared id `shared` to the file added as `local`: spans with either id point to
    /// it. Ignored unless `shared` is a shared id and `local` a place in the list.
    pub fn share(&mut self, local: FileId, shared: FileId) {
        if shared.is_shared() && (local.0 as usize) < self.files.len() {
            self.shared.insert(shared.0, local.0);
        }
    }

    /// The place in the list of file `id` (its own for a local id, the bound one for a shared
    /// id).
    fn index(&self, id: FileId) -> Option<usize> {
        if id.is_shared() {
            self.shared.get(&id.0).map(|&i| i as usize)
        } else {
            Some(id.0 as usize)
        }
    }

    /// `id` as a place in the list ([`Self::share`]); unchanged when it is not bound.
    pub fn local(&self, id: FileId) -> FileId {
        self.index(id).map_or(id, |i| FileId(i as u32))
    }

    /// Replaces the text of file `id` (added with a placeholder while it was read elsewhere).
    pub fn set_text(&mut self, id: FileId, text: String) {
        if let Some(f) = self.index(id).and_then(|i| self.files.get_mut(i)) {
            f.text = cut_to_fit(text);
            f.evicted = None;
            f.line_starts = OnceLock::new();
        }
    }

    /// Lets go of the text of file `id`, read from `path` with `stamp`: the file parsed without
    /// a diagnostic, so only a later stage's diagnostic could cite it, and then the text is
    /// read again ([`SourceFile::text`]). Keeps a large model's sources out of memory while it
    /// is built.
    pub fn evict(&mut self, id: FileId, path: PathBuf, stamp: FileStamp) {
        if let Some(f) = self.index(id).and_then(|i| self.files.get_mut(i)) {
            f.text = String::new();
            f.line_starts = OnceLock::new();
            f.evicted = Some(Box::new(Evicted {
                path,
                stamp,
                text: OnceLock::new(),
            }));
        }
    }

    /// Moves every file of `other` to the end of this list (file `i` of `other` becomes file
    /// `len() + i`; where a file was included is forgotten, and so are shared ids: the caller
    /// turns them into places first, [`Self::local`]).
    pub fn append(&mut self, other: Sources) {
        self.files.extend(other.files.into_iter().map(|mut f| {
            f.included_at = None;
            f
        }));
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    pub fn get(&self, id: FileId) -> Option<&SourceFile> {
        self.files.get(self.index(id)?)
    }

    pub fn text(&self, id: FileId) -> &str {
        self.get(id).map_or("", SourceFile::text)
    }

    pub fn name(&self, id: FileId) -> &str {
        self.get(id).map_or("", |f| f.name.as_str())
    }

    fn file(&self, id: FileId) -> Result<&SourceFile, files::Error> {
        self.get(id).ok_or(files::Error::FileMissing)
    }

    /// [`Self::file`] for showing source lines: a text that could not be read again is missing.
    fn shown_file(&self, id: FileId) -> Result<&SourceFile, files::Error> {
        self.file(id).and_then(|f| {
            if f.text_lost() {
                Err(files::Error::FileMissing)
            } else {
                Ok(f)
            }
        })
    }

    /// Records that a QC `$include` at `at` reads file `id` (the first inclusion counts).
    pub fn note_include(&mut self, id: FileId, at: FileSpan) {
        if let Some(f) = self.index(id).and_then(|i| self.files.get_mut(i)) {
            if f.included_at.is_none() && at.file != id {
                f.included_at = Some(at);
            }
        }
    }

    /// A key that orders positions as a QC reader meets them, the included files read where
    /// their `$include` stands: the offsets of the `$include`s leading to `at`'s file, from the
    /// main file down, then `at`'s own offset. Keys compare lexicographically.
    pub fn reading_order(&self, at: FileSpan) -> Vec<u32> {
        let mut key = vec![at.span.start];
        let mut file = at.file;
        // includes nest a bounded number of levels; the bound also stops a cycle
        for _ in 0..64 {
            let Some(site) = self.get(file).and_then(|f| f.included_at) else {
                break;
            };
            key.push(site.span.start);
            file = site.file;
        }
        key.reverse();
        key
    }

    /// Frees the text of every file no diagnostic of `diags` points into (their names and ids
    /// stay): what a finished build keeps to render its diagnostics.
    pub fn keep_cited(&mut self, diags: &[Diagnostic]) {
        let mut cited = vec![false; self.files.len()];
        for l in diags.iter().flat_map(|d| &d.labels) {
            if let Some(c) = self.index(l.at.file).and_then(|i| cited.get_mut(i)) {
                *c = true;
            }
        }
        for (f, keep) in self.files.iter_mut().zip(cited) {
            if !keep {
                f.text = String::new();
                f.evicted = None;
                f.line_starts = OnceLock::new();
            }
        }
    }
}

impl<'a> Files<'a> for Sources {
    type FileId = FileId;
    type Name = &'a str;
    type Source = &'a str;

    fn name(&'a self, id: FileId) -> Result<&'a str, files::Error> {
        Ok(self.file(id)?.name.as_str())
    }

    fn source(&'a self, id: FileId) -> Result<&'a str, files::Error> {
        Ok(self.shown_file(id)?.text())
    }

    fn line_index(&'a self, id: FileId, byte_index: usize) -> Result<usize, files::Error> {
        Ok(self
            .shown_file(id)?
            .line_index(byte_index.min(u32::MAX as usize) as u32))
    }

    fn line_range(&'a self, id: FileId, line_index: usize) -> Result<Range<usize>, files::Error> {
        let f = self.shown_file(id)?;
        let line_starts = f.line_starts();
        let start = *line_starts
            .get(line_index)
            .ok_or(files::Error::LineTooLarge {
                given: line_index,
                max: line_starts.len().saturating_sub(1),
            })? as usize;
        let end = line_starts
            .get(line_index + 1)
            .map_or(f.text().len(), |&e| e as usize);
        Ok(start..end)
    }
}

/// How diagnostics are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageFormat {
    Human,
    Json,
}

/// Renders one diagnostic as codespan's rich text, without colour (for tests and logs).
pub fn render_plain(sources: &Sources, d: &Diagnostic) -> String {
    let config = term::Config::default();
    match term::emit_into_string(&config, sources, &d.to_codespan()) {
        Ok(s) => s,
        // Reachable with a span outside its file (a bug), or a text let go after parsing whose
        // file changed before a diagnostic needed it; still print something.
        Err(e) => format!(
            "{}[{}]: {} (could not show the source: {e})\n",
            d.severity.as_str(),
            d.code,
            d.message
        ),
    }
}

/// Renders one diagnostic to a terminal stream, with colour if the stream supports it.
pub fn render_styled(
    sources: &Sources,
    d: &Diagnostic,
    out: &mut impl term::termcolor::WriteColor,
) -> std::io::Result<()> {
    let config = term::Config::default();
    match term::emit_to_write_style(out, &config, sources, &d.to_codespan()) {
        Ok(()) => Ok(()),
        Err(files::Error::Io(e)) => Err(e),
        Err(e) => {
            writeln!(
                out,
                "{}[{}]: {} (could not show the source: {e})",
                d.severity.as_str(),
                d.code,
                d.message
            )
        }
    }
}

/// The stable JSON form of a diagnostic (`--message-format json`), documented in
/// `docs/diagnostics.md`. Lines and columns are 1-based; columns count characters.
#[derive(serde::Serialize, Debug, PartialEq)]
pub struct JsonDiagnostic<'a> {
    pub severity: &'static str,
    pub code: &'static str,
    pub message: &'a str,
    pub file: Option<&'a str>,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub end_line: Option<usize>,
    pub end_column: Option<usize>,
    pub notes: Vec<String>,
}

/// Converts a diagnostic to its JSON object. Secondary labels become notes
/// (`"file:line:column: label"`), so no information is lost.
pub fn to_json<'a>(sources: &'a Sources, d: &'a Diagnostic) -> JsonDiagnostic<'a> {
    let mut out = JsonDiagnostic {
        severity: d.severity.as_str(),
        code: d.code.as_str(),
        message: &d.message,
        file: d.file_name.as_deref(),
        line: None,
        column: None,
        end_line: None,
        end_column: None,
        notes: Vec::new(),
    };
    if let Some(primary) = d.labels.iter().find(|l| l.primary) {
        if let Some(f) = sources.get(primary.at.file) {
            out.file = Some(&f.name);
        }
        // a text that could not be read again has no lines to point at
        if let Some(f) = sources.get(primary.at.file).filter(|f| !f.text_lost()) {
            let (l, c) = f.line_col(primary.at.span.start);
            let (el, ec) = f.line_col(primary.at.span.end);
            out.file = Some(&f.name);
            out.line = Some(l);
            out.column = Some(c);
            out.end_line = Some(el);
            out.end_column = Some(ec);
            if !primary.message.is_empty() {
                out.notes.push(primary.message.clone());
            }
        }
    }
    for l in d.labels.iter().filter(|l| !l.primary) {
        if let Some(f) = sources.get(l.at.file).filter(|f| !f.text_lost()) {
            let (line, col) = f.line_col(l.at.span.start);
            out.notes
                .push(format!("{}:{line}:{col}: {}", f.name, l.message));
        }
    }
    out.notes.extend(d.notes.iter().cloned());
    out
}

/// One JSON line for a diagnostic.
pub fn render_json(sources: &Sources, d: &Diagnostic) -> String {
    // Serialising a struct of strings and integers cannot fail.
    serde_json::to_string(&to_json(sources, d)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An evicted text is read again, as it was, when a diagnostic needs it; once the file has
    /// changed it is not shown at all (never lines of the new contents, never a panic).
    #[test]
    fn an_evicted_text_is_read_again_or_not_shown() {
        let dir = std::env::temp_dir().join(format!("mdlc-evict-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.smd");
        std::fs::write(&path, "version 1\nnodes\nend\n").unwrap();
        let mut s = Sources::new();
        let id = s.add("a.smd", String::new());
        let stamp = FileStamp::of(&path).unwrap();
        s.evict(id, path.clone(), stamp);
        assert_eq!(s.get(id).unwrap().len(), 20);
        let d = Diagnostic::new(
            Code::SmdNegativeFrame,
            "here",
            Span::new(10, 15).in_file(id),
            "this",
        );
        let shown = render_plain(&s, &d);
        assert!(shown.contains("a.smd:2:1"), "{shown}");
        assert!(shown.contains("2 │ nodes"), "{shown}");
        assert_eq!(to_json(&s, &d).line, Some(2));

        // the file changes (another length) before the text is needed
        let mut s2 = Sources::new();
        let id2 = s2.add("a.smd", String::new());
        s2.evict(id2, path.clone(), stamp);
        std::fs::write(&path, "version 1\n// edited\nnodes\nend\n").unwrap();
        let d2 = Diagnostic::new(
            Code::SmdNegativeFrame,
            "here",
            Span::new(10, 15).in_file(id2),
            "this",
        );
        let shown = render_plain(&s2, &d2);
        assert!(shown.contains("could not show the source"), "{shown}");
        assert!(!shown.contains("edited"), "{shown}");
        let j = to_json(&s2, &d2);
        assert_eq!((j.file, j.line), (Some("a.smd"), None));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn line_col_counts_characters_and_lines() {
        let mut s = Sources::new();
        let id = s.add("a.smd", "ab\r\né x\nlast".to_string());
        let f = s.get(id).unwrap();
        assert_eq!(f.line_col(0), (1, 1));
        assert_eq!(f.line_col(4), (2, 1));
        // `x` is after a two-byte character: column 3, not 4
        assert_eq!(f.line_col(7), (2, 3));
        assert_eq!(f.line_col(9), (3, 1));
        assert_eq!(f.line_col(100), (3, 5));
    }

    #[test]
    fn every_code_is_unique_and_well_formed() {
        let mut seen = std::collections::HashSet::new();
        for c in Code::ALL {
            let s = c.as_str();
            assert!(seen.insert(s), "{s} twice");
            assert_eq!(s.len(), 5);
            let want = match c.severity() {
                Severity::Error => 'E',
                Severity::Warning => 'W',
                Severity::Note => 'N',
            };
            assert!(
                s.starts_with(want),
                "{s} has the wrong letter for {:?}",
                c.severity()
            );
            assert!(!c.summary().is_empty());
        }
    }
}
