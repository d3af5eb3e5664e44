//! The `PuzzleService` RPCs against a server started in the test, compared
//! with the library's own answers.

use tonic::Code;
use xccd::puzzles::kinds::{self, EncodeOptions, Kind};
use xccd::service::proto as pb;
use xccd::service::proto::puzzle_service_client::PuzzleServiceClient;
use xccd::service::server::{start, RunningServer, ServeConfig};
use xccd::service::PoolConfig;

async fn server() -> (
    RunningServer,
    PuzzleServiceClient<tonic::transport::Channel>,
) {
    let server = start(ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        pool: PoolConfig {
            threads: 2,
            max_jobs: 16,
            ..PoolConfig::default()
        },
        ..ServeConfig::default()
    })
    .await
    .unwrap();
    let client = PuzzleServiceClient::connect(format!("http://{}", server.addr))
        .await
        .unwrap();
    (server, client)
}

fn text(kind: pb::PuzzleKind, text: &str) -> Option<pb::Puzzle> {
    Some(pb::Puzzle {
        kind: kind as i32,
        grid: Some(pb::puzzle::Grid::Text(text.to_string())),
        ..Default::default()
    })
}

const SUDOKU: &str =
    "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79";

/// The same answer as the library, for every kind: solve with a limit,
/// then count by enumeration.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn solve_check_and_enumerate_match_the_library() {
    let (server, mut client) = server().await;
    let cases = [
        (pb::PuzzleKind::Sudoku, Kind::Sudoku, SUDOKU.to_string()),
        (pb::PuzzleKind::Queens, Kind::Queens, "6".to_string()),
        (
            pb::PuzzleKind::Latin,
            Kind::Latin,
            "1 . .\n. . .\n. . .\n".to_string(),
        ),
        (
            pb::PuzzleKind::Futoshiki,
            Kind::Futoshiki,
            ". .<.\n    \n. . .\n^\n. . 1\n".to_string(),
        ),
    ];
    for (pb_kind, kind, grid) in cases {
        let encoded = kinds::encode(kind, &grid, &EncodeOptions::default()).unwrap();
        let expected = xccd::puzzles::solve(&*encoded, None, usize::MAX);
        assert!(expected.complete);
        let reply = client
            .solve_puzzle(pb::SolvePuzzleRequest {
                puzzle: text(pb_kind, &grid),
                limit: 1000,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert!(reply.exhausted, "{kind}");
        let mut got: Vec<String> = reply.solutions.iter().map(|s| s.text.clone()).collect();
        let mut want = expected.grids.clone();
        got.sort();
        want.sort();
        assert_eq!(got, want, "{kind}: solutions");

        let check = client
            .check_puzzle(pb::CheckPuzzleRequest {
                puzzle: text(pb_kind, &grid),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(check.valid, expected.count == 1, "{kind}: check");
        assert_eq!(u64::from(check.solutions_found), expected.count.min(2));

        let mut stream = client
            .enumerate_puzzle(pb::EnumeratePuzzleRequest {
                puzzle: text(pb_kind, &grid),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let (mut streamed, mut summary) = (Vec::new(), None);
        while let Some(m) = stream.message().await.unwrap() {
            match m.event {
                Some(pb::enumerate_puzzle_response::Event::Solutions(batch)) => {
                    streamed.extend(batch.solutions.into_iter().map(|s| s.text))
                }
                Some(pb::enumerate_puzzle_response::Event::Summary(s)) => summary = Some(s),
                _ => {}
            }
        }
        streamed.sort();
        assert_eq!(streamed, want, "{kind}: enumerated");
        assert_eq!(summary.unwrap().solutions, expected.count);
    }
    server.shutdown().await.unwrap();
}

/// A futoshiki given as cells and inequalities is the same puzzle as its text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_futoshiki_equals_its_text() {
    let (server, mut client) = server().await;
    let as_text = ". .<.\n\n. . .\n^\n. . 1\n";
    let cells = pb::CellGrid {
        rows: vec![
            pb::CellRow {
                cells: vec![".".into(), ".".into(), ".".into()],
            },
            pb::CellRow {
                cells: vec![".".into(), ".".into(), ".".into()],
            },
            pb::CellRow {
                cells: vec![".".into(), ".".into(), "1".into()],
            },
        ],
        inequalities: vec![
            pb::Inequality {
                row: 0,
                col: 1,
                other_row: 0,
                other_col: 2,
            },
            pb::Inequality {
                row: 1,
                col: 0,
                other_row: 2,
                other_col: 0,
            },
        ],
    };
    let solve = |puzzle| pb::SolvePuzzleRequest {
        puzzle,
        limit: 100,
        ..Default::default()
    };
    let a = client
        .solve_puzzle(solve(text(pb::PuzzleKind::Futoshiki, as_text)))
        .await
        .unwrap()
        .into_inner();
    let b = client
        .solve_puzzle(solve(Some(pb::Puzzle {
            kind: pb::PuzzleKind::Futoshiki as i32,
            grid: Some(pb::puzzle::Grid::Cells(cells)),
            ..Default::default()
        })))
        .await
        .unwrap()
        .into_inner();
    assert!(!a.solutions.is_empty());
    assert_eq!(
        a.solutions.iter().map(|s| &s.text).collect::<Vec<_>>(),
        b.solutions.iter().map(|s| &s.text).collect::<Vec<_>>()
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn encode_gives_dlx_that_parses() {
    let (server, mut client) = server().await;
    let reply = client
        .encode_puzzle(pb::EncodePuzzleRequest {
            puzzle: text(pb::PuzzleKind::Latin, "4"),
        })
        .await
        .unwrap()
        .into_inner();
    let problem = xccd::xcc::dlx_format::parse(&reply.dlx).unwrap();
    assert_eq!(problem.options().len(), 64);
    assert!(!reply.has_side_condition);
    server.shutdown().await.unwrap();
}

/// Bad puzzles get INVALID_ARGUMENT naming the place; the server goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_puzzles_are_invalid_arguments() {
    let (server, mut client) = server().await;
    let bad = [
        (text(pb::PuzzleKind::Sudoku, "12345"), "puzzle.text"),
        (text(pb::PuzzleKind::Latin, "1 2\n3\n"), "line 2"),
        (text(pb::PuzzleKind::Hitori, "1 x\n2 1\n"), "line 1"),
        (text(pb::PuzzleKind::Unspecified, "4"), "puzzle.kind"),
        (None, "puzzle"),
        (
            Some(pb::Puzzle {
                kind: pb::PuzzleKind::Futoshiki as i32,
                grid: Some(pb::puzzle::Grid::Cells(pb::CellGrid {
                    rows: vec![
                        pb::CellRow {
                            cells: vec![".".into(), ".".into()]
                        };
                        2
                    ],
                    inequalities: vec![pb::Inequality {
                        row: 0,
                        col: 0,
                        other_row: 1,
                        other_col: 1,
                    }],
                })),
                ..Default::default()
            }),
            "inequalities[0]",
        ),
    ];
    for (puzzle, needle) in bad {
        let status = client
            .solve_puzzle(pb::SolvePuzzleRequest {
                puzzle,
                limit: 1,
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{needle}: {status:?}");
        assert!(
            status.message().contains(needle),
            "{needle}: {}",
            status.message()
        );
    }
    let ok = client
        .check_puzzle(pb::CheckPuzzleRequest {
            puzzle: text(pb::PuzzleKind::Sudoku, SUDOKU),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(ok.valid);
    assert_eq!(ok.solution.unwrap().lines.len(), 9);
    server.shutdown().await.unwrap();
}

/// The side conditions hold over gRPC: the puzzles that showed white cells
/// cut off (hitori) and the empty drawing (slitherlink) accepted, answered
/// as the CLI answers them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn side_conditions_hold_over_grpc() {
    let (server, mut client) = server().await;
    let hitori = "2 2 1 4\n1 3 3 2\n4 1 2 2\n3 4 4 1\n";
    let solved = client
        .solve_puzzle(pb::SolvePuzzleRequest {
            puzzle: text(pb::PuzzleKind::Hitori, hitori),
            limit: 100,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let encoded = kinds::encode(Kind::Hitori, hitori, &EncodeOptions::default()).unwrap();
    let library = xccd::puzzles::solve(&*encoded, None, usize::MAX);
    assert_eq!(library.count, 2);
    let mut got: Vec<String> = solved.solutions.into_iter().map(|s| s.text).collect();
    got.sort();
    let mut want = library.grids;
    want.sort();
    assert_eq!(got, want);
    assert!(solved.exhausted);

    let check = client
        .check_puzzle(pb::CheckPuzzleRequest {
            puzzle: text(
                pb::PuzzleKind::Hitori,
                "4 1 2 1\n1 3 4 4\n3 1 3 2\n1 4 1 4\n",
            ),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!check.valid);
    assert_eq!(check.solutions_found, 0, "no solution, as the CLI says");

    for (grid, loops) in [("..\n..\n", 13), ("0.\n..\n", 1)] {
        let mut stream = client
            .enumerate_puzzle(pb::EnumeratePuzzleRequest {
                puzzle: text(pb::PuzzleKind::Slitherlink, grid),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let (mut drawings, mut summary) = (0, None);
        while let Some(m) = stream.message().await.unwrap() {
            match m.event {
                Some(pb::enumerate_puzzle_response::Event::Solutions(batch)) => {
                    for drawing in &batch.solutions {
                        assert!(
                            drawing.text.contains('-'),
                            "the empty drawing:\n{}",
                            drawing.text
                        );
                    }
                    drawings += batch.solutions.len();
                }
                Some(pb::enumerate_puzzle_response::Event::Summary(s)) => summary = Some(s),
                _ => {}
            }
        }
        assert_eq!(drawings, loops, "{grid:?}");
        assert_eq!(summary.unwrap().solutions, loops as u64);
    }
    server.shutdown().await.unwrap();
}

/// DrawPuzzle draws the solutions the other RPCs return, as the CLI's
/// `--format svg` does; what is not a solved grid of its kind, or too big
/// to draw, is INVALID_ARGUMENT naming the field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn draw_draws_a_solution_and_refuses_what_is_not_one() {
    use tonic_types::StatusExt;
    let (server, mut client) = server().await;
    let solved = client
        .solve_puzzle(pb::SolvePuzzleRequest {
            puzzle: text(pb::PuzzleKind::Sudoku, SUDOKU),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let solution = solved.solutions[0].clone();
    let drawn = client
        .draw_puzzle(pb::DrawPuzzleRequest {
            kind: pb::PuzzleKind::Sudoku as i32,
            solution: Some(solution.clone()),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        Some(drawn.svg),
        xccd::puzzles::svg::svg(Kind::Sudoku, &solution.text)
    );
    let field = |kind: pb::PuzzleKind, text: String| pb::DrawPuzzleRequest {
        kind: kind as i32,
        solution: Some(pb::PuzzleSolution {
            text,
            lines: Vec::new(),
        }),
    };
    let huge_board = format!("{}\n", "Q".repeat(201)).repeat(201);
    let bad = [
        (field(pb::PuzzleKind::Unspecified, solution.text), "kind"),
        (
            field(pb::PuzzleKind::Latin, "1 2\n3\n".into()),
            "solution.text",
        ),
        (field(pb::PuzzleKind::Queens, huge_board), "solution.text"),
        (
            field(pb::PuzzleKind::Latin, "1 ".repeat(300_000)),
            "solution.text",
        ),
    ];
    for (request, name) in bad {
        let status = client.draw_puzzle(request).await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        let fields: Vec<String> = status
            .get_details_bad_request()
            .map(|b| b.field_violations.into_iter().map(|v| v.field).collect())
            .unwrap_or_default();
        assert_eq!(fields, vec![name.to_string()], "{}", status.message());
    }
    server.shutdown().await.unwrap();
}
