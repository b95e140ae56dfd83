# 思考ログの通知（モデレーター向け）
notice-tool-failed-title = ツール呼び出しに失敗しました
notice-tool-stopped-title = /kill でツールを停止
notice-deliberate-title = トリガーによりツールが許可されました
notice-progress-title = 静かなターンの進行状況
notice-caught-up-title = 不在中に送られたメッセージを確認しました
notice-field-tool = ツール
notice-field-kind = 種類
notice-field-code = コード
notice-field-reason = 理由
notice-field-arguments = 引数（秘匿済み）
notice-field-effect = 影響
notice-field-trigger = トリガー
notice-field-channel = チャンネル
notice-field-progress = 進行状況
notice-ending-done = 完了：ツールは停止前に処理を終えていました。
notice-ending-cancelled = キャンセル：ツールは処理を終えずに停止しました。
notice-ending-may-still-finish = 完了する可能性あり：ツールが停止の指示に応じなかったため、処理がこの後行われる可能性があります。取り消しは行われていません。
notice-kind-unknown-tool = 不明なツール
notice-kind-invalid-arguments = 無効な引数
notice-kind-denied = 権限がありません
notice-kind-truncated = 引数が途切れています（未実行）
notice-kind-blocked = 実行前にブロックされました
notice-kind-execution = 実行に失敗しました
notice-kind-business = ツールが拒否しました
notice-kind-timed-out = タイムアウト

# ツール実行中に会話に表示する進行状況
progress-generic = { $tool } を実行中…
progress-plan-image = 🎨 画像を計画しています…
progress-fetch-older-messages = 📜 過去のメッセージを読んでいます…

# 回復のヒント（エラー返信と失敗したツールで共通）
tip-rate-limited-wait = プロバイダーが混雑しています。1分ほど待ってから再度お試しください。
tip-balance-top-up = プロバイダーの残高が不足しています。ボット管理者によるチャージが必要です。
tip-balance-other-key = ボット管理者は別のAPIキーを追加するか、プロバイダーを切り替えられます。
tip-unauthorized-check-key = ボット管理者はプロバイダーのAPIキーを確認してください。
tip-model-unknown-check-name = ボット管理者は設定されたモデル名を確認してください。
tip-context-shorter = 短いメッセージにするか、新しい会話を始めてください。
tip-safety-rephrase = プロバイダーの安全ポリシーにより拒否されました。言い換えてお試しください。
tip-invalid-request-rephrase = リクエストを言い換えてお試しください。
tip-missing-model-install = ボット管理者は画像ワークフローが使うモデルファイルをインストールする必要があります。
tip-timeout-retry-later = プロバイダーが時間内に応答しませんでした。後でもう一度お試しください。
tip-server-error-retry-later = プロバイダーで内部エラーが発生しました。後でもう一度お試しください。
tip-network-check-endpoint = プロバイダーに接続できませんでした。ボット管理者はエンドポイントを確認してください。
tip-reply-too-long-shorter = もう一度お試しいただくか、短めの回答をお願いしてください。

# 会話内のターン通知
turn-pass-limit = ここで止めました：この返信は手順が多すぎました。
turn-failure-limit = 止めました：ツールが続けて何度も失敗しました。
turn-provider-error = 今は返信できませんでした。{ $reason }
turn-empty-response = 返信を思いつけませんでした。もう一度お試しください。
settings-unavailable = 今は設定を読み込めないため、まだお答えできません。少し待ってからもう一度話しかけてください。
turn-crashed = こちら側で問題が起きたため、この返信を中断しました。もう一度お試しください。
turn-queue-dropped = ここでは待機中のメッセージが多すぎるため、このメッセージはスキップしました。少ししてからもう一度送ってください。
turn-plans-incomplete = 約束した画像の一部が計画されていません：{ $missing }。

# プロバイダーの失敗理由（ユーザー向け）
error-rate-limited = AIサービスが現在混雑しています。
error-insufficient-balance = AIサービスのアカウント残高が不足しています。
error-unauthorized = AIサービスがボットの認証情報を拒否しました。
error-model-unknown = 設定されたAIモデルが利用できません。
error-context-too-long = 会話がAIモデルには長すぎます。
error-safety-refusal = AIサービスが安全ポリシーによりこのリクエストを断りました。
error-invalid-request = AIサービスがリクエストを拒否しました。
error-missing-model-file = 画像サービスにモデルファイルがありません。
error-timeout = AIサービスが時間内に応答しませんでした。
error-server-error = AIサービスで内部エラーが発生しました。
error-network-error = AIサービスに接続できませんでした。
error-reply-too-long = AIサービスの回答が長すぎたため、途中で止めました。

# スラッシュコマンド：名前は小文字・空白なし
cmd-kill-name = 停止
cmd-kill-description = このチャンネルでのボットの返信を止めます
cmd-drafting-name = 下書き
cmd-drafting-description = このサーバーの返信下書き（Response Drafting）をオン・オフします
cmd-drafting-state-name = 状態
cmd-drafting-state-description = オンまたはオフ
cmd-thoughtlog-name = 思考ログ
cmd-thoughtlog-description = ボットの行動をモデレーターが確認する非公開チャンネルを選びます
cmd-thoughtlog-set-name = 設定
cmd-thoughtlog-set-description = チャンネルを思考ログとして使います
cmd-thoughtlog-set-channel-name = チャンネル
cmd-thoughtlog-set-channel-description = @everyone が閲覧できないチャンネル
cmd-thoughtlog-off-name = オフ
cmd-thoughtlog-off-description = 思考ログへの投稿をやめます
cmd-thoughtlog-summaries-name = まとめ
cmd-thoughtlog-summaries-description = 終わったターンのうち、思考ログにまとめを投稿するもの
cmd-thoughtlog-summaries-mode-name = 対象
cmd-thoughtlog-summaries-mode-description = off、problems（正常に終わらなかったターン。既定）、all

# コマンドの返答
kill-stopped = 進行中の返信を止めました。
kill-stopped-own = あなたへの進行中の返信を止めました。
kill-tool-done = ツール `{ $tool }` はすでに完了していたため、処理は実行済みです。
kill-tool-cancelled = ツール `{ $tool }` は完了前にキャンセルされました。
kill-tool-may-still-finish = ツール `{ $tool }` は停止の指示に応じなかったため、処理がこの後完了する可能性があります。
kill-dropped-own = 破棄したあなたの待機メッセージ：{ $count } 件。
kill-dropped-all = 破棄した待機メッセージ（全員分）：{ $count } 件。
kill-nothing = ここでは何も実行されていませんでした。
kill-denied = これを止められるのは、依頼した本人かメッセージの管理権限を持つ人だけです。
drafting-on = 返信下書きがオンです：返信とツールのリクエストは投稿前に確認されます。
drafting-off = 返信下書きがオフです：返信は書かれるそばから送られます。
thoughtlog-set = 思考ログを { $channel } に設定しました。
thoughtlog-public = { $channel } は全員が閲覧できるため、思考ログにできません。@everyone が閲覧できないチャンネルを選んでください。
thoughtlog-off = 思考ログをオフにしました。
thoughtlog-summaries = 思考ログのターンのまとめ：{ $mode }。
summaries-off = なし
summaries-problems = 正常に終わらなかったターンのみ（エラー、上限、停止）
summaries-all = すべてのターン
command-needs-manage-server = この操作には「サーバー管理」の権限が必要です。
command-server-only = このコマンドはサーバー内でのみ使えます。
command-failed = コマンドの実行中に問題が発生しました。もう一度お試しください。

# 思考ログ：各ターンのまとめ
notice-turn-title = ターンのまとめ
notice-field-status = 状態
notice-field-passes = パス数
notice-field-tool-calls = ツール呼び出し
notice-field-duration = 所要時間
notice-field-tokens = トークン（プロンプト / 返信）
notice-field-reviews = レビュー
image-failed = 予定していた画像を作れませんでした。{ $reason }
reminder-trigger = [リマインダーの時間] { $whom } に、あなたの言葉でこのリマインダーを伝えてください：{ $text }
reminder-everyone = ここにいる皆さん
reminder-not-delivered = { $channel } のリマインダーは届けられませんでした。そのチャンネルでは発言できなくなっています。モデレーターに相談するか、発言できる場所で設定し直してください。
cmd-reminders-name = リマインダー
cmd-reminders-description = 自分のリマインダーを一覧・キャンセルします
cmd-reminders-list-name = 一覧
cmd-reminders-list-description = 自分が設定した、または自分宛てのリマインダーを表示します
cmd-reminders-cancel-name = キャンセル
cmd-reminders-cancel-description = リマインダーを1つキャンセルします
cmd-reminders-cancel-id-name = 番号
cmd-reminders-cancel-id-description = /リマインダー 一覧 に出る番号
reminders-none = リマインダーはありません。
reminders-title = あなたのリマインダー：
reminders-cancelled = リマインダー #{ $id } をキャンセルしました。
reminders-not-yours = あなたが設定した、またはあなた宛てのリマインダー #{ $id } はありません。
# /reminders list の1行。
reminders-line = `#{ $id }` { $when } ({ $zone }, { $repeat ->
        [daily] 毎日
        [weekly] 毎週
       *[once] 1回
    }) — { $text }

# /random: random quiet turns for a server.
cmd-random-name = ランダム
cmd-random-description = このサーバーでのランダムな発言をオン・オフします
cmd-random-state-name = 状態
cmd-random-state-description = on または off
cmd-random-percent-name = 確率
cmd-random-percent-description = メッセージごとの確率（%、1〜100）
cmd-random-per_hour-name = 毎時上限
cmd-random-per_hour-description = 1時間あたりの最大回数（1〜60）
random-on = ランダムな発言がオンになりました：許可されたチャンネルでメッセージごとに { $percent }% の確率、1時間に最大 { $per_hour } 回。
random-off = ランダムな発言はオフです。
notice-field-channels-read = 読み込んだチャンネル
notice-field-missed = 未返信のボット宛てメッセージ
notice-field-answered = 返信待ちに追加
rate-limited = メッセージが速すぎて返信が追いつかないため、1分ほど一部をスキップします。少し待ってからもう一度どうぞ。
notice-quiet-skipped-title = リマインダーは届けられませんでした
notice-quiet-skipped-reason = このチャンネルのアクセス設定ではボットが発言できません。
reply-cut-note = *（この返信は長さの上限に達したため、ここで終わります。）*
notice-reply-cut-title = 返信が長さの上限で切れました
notice-reply-cut-reason = モデルが provider.max_tokens で止まり、返信にその旨を添えました。長い返信には provider.max_tokens を上げてください。
notice-context-trimmed-title = モデルのコンテキストに収めるため古いメッセージを省きました
notice-field-left-out = 省いたメッセージ
cmd-memory-name = 記憶
cmd-memory-description = あなたやこのサーバーについて覚えていることの確認と削除
cmd-memory-show-name = 表示
cmd-memory-show-description = あなたについて覚えていること
cmd-memory-server-name = サーバー
cmd-memory-server-description = このサーバーについて覚えていること（サーバー管理）
cmd-memory-forget-name = 忘れる
cmd-memory-forget-description = 番号で記憶を一つ、または自分の記憶をすべて忘れる
cmd-memory-forget-target-name = 対象
cmd-memory-forget-target-description = /memory show の番号、または "all"
cmd-forget-me-name = 私を忘れて
cmd-forget-me-description = あなたについて覚えていることを、どこでもすべて忘れる
memory-none = ここでは何も覚えていません。
memory-title = 覚えていること：
memory-line = #{ $id } { $text }
memory-forget-what = /memory show の番号か "all" を指定してください。
memory-forgotten = { $count } 件の記憶を忘れました。
memory-forgot-nothing = 忘れるものはありません：ここにはその記憶がありません。
forget-me-done = 完了：すべてのサーバーと DM で、あなたについての記憶を { $count } 件忘れました。
cmd-channels-name = チャンネル
cmd-channels-description = 応答する場所：チャンネルを許可・ブロック・常に応答、または設定を解除
cmd-channels-rule-name = 規則
cmd-channels-rule-description = allow（許可したチャンネルだけ）、block、always（すべてのメッセージ）、clear
cmd-channels-channel-name = チャンネル
cmd-channels-channel-description = 対象のチャンネル
cmd-roles-name = ロール
cmd-roles-description = 応答する相手：ロールを許可・ブロック、または設定を解除
cmd-roles-rule-name = 規則
cmd-roles-rule-description = allow（許可したロールを持つメンバーだけ）、block、clear
cmd-roles-role-name = ロール
cmd-roles-role-description = 対象のロール
cmd-access-name = アクセス
cmd-access-description = このサーバーのアクセス設定（ブロックが許可より優先）
access-set = 完了：{ $target } を { $rule } にしました。
access-full = その一覧は満杯です（200 件）。先にいくつか解除してください。{ $target } は変わっていません。
access-show = アクセス設定（ブロックが許可より優先）：
    - 許可チャンネル：{ $allowed_channels }
    - ブロックチャンネル：{ $blocked_channels }
    - 常に応答：{ $always_channels }
    - 許可ロール：{ $allowed_roles }
    - ブロックロール：{ $blocked_roles }
notice-settings-title = 設定が変更されました
notice-field-by = 変更者
notice-field-change = 変更内容
cmd-status-name = 状態
cmd-status-description = ここでの設定：ペルソナ、モデル、下書き確認、待ち行列、リマインダー
cmd-help-name = ヘルプ
cmd-help-description = できること、話しかけ方、使えるコマンド
status-yes = はい
status-no = いいえ
status-text = **状態**
    - ペルソナ：{ $persona }
    - モデル：{ $model }
    - 返信の下書き確認：{ $drafting }
    - 思考ログ：{ $thought_log }
    - ターンのまとめ：{ $summaries }
    - 返信の形式：{ $replies }
    - 状態のリアクション：{ $reactions }
    - 返信のボタン：{ $buttons }
    - ここで応答中：{ $running }、待ち：{ $waiting }
    - ここに投稿できる：{ $can_post }
    - あなたのリマインダー：{ $reminders }
status-no-content = Discord は私宛てでないメッセージの本文を渡していません（Message Content インテントなし）：メンション、私への返信、DM、コマンドには答えます。トリガーワード、常時返信チャンネル、メンションなしの続き、ランダム返信はオフです。
help-text = 私は { $persona } です。メンションするか、私のメッセージに返信するか、DM で話しかけてください。応答中にここで書いたことは同じ会話の続きになります。覚えておくこと、リマインダー、画像の計画ができます。
    - /kill：ここでしていることを止めます。
    - /reminders list|cancel：あなたのリマインダー。
    - /memory show|forget：あなたについて覚えていること。/forget-me ですべて忘れます。
    - /status：ここでの設定。
help-managers = サーバー管理権限があれば：/channels、/roles、/access（応答する場所と相手）、/persona、/tools、/drafting、/thoughtlog、/random、/replies、/memory server。
cmd-tools-name = ツール
cmd-tools-description = 慎重ツールモード：メッセージが求めたときだけツールを提示
cmd-tools-deliberate-name = 慎重
cmd-tools-deliberate-description = このサーバーの慎重ツールモードのオン・オフ
cmd-tools-deliberate-state-name = 状態
cmd-tools-deliberate-state-description = on または off
cmd-tools-phrases-name = フレーズ
cmd-tools-phrases-description = 慎重モードでツールを提示するフレーズの追加・削除
cmd-tools-phrases-action-name = 操作
cmd-tools-phrases-action-description = add または remove
cmd-tools-phrases-tool-name = ツール
cmd-tools-phrases-tool-description = フレーズが提示するツール
cmd-tools-phrases-phrase-name = フレーズ
cmd-tools-phrases-phrase-description = メッセージに含まれるとツールを提示する言葉（大文字小文字は区別しません）
cmd-tools-show-name = 表示
cmd-tools-show-description = 慎重ツールモードとこのサーバー独自のフレーズ
tools-deliberate-on = 慎重ツールモードはオンです：メッセージが求めたときだけツールを提示します。
tools-deliberate-off = 慎重ツールモードはオフです：すべてのツールを提示します。
tools-phrase-added = 追加しました：「{ $phrase }」で { $tool } を提示します。
tools-phrase-refused = 追加できません：{ $tool } のフレーズは既に 20 個あるか、フレーズが空です。
tools-phrase-removed = 削除しました：「{ $phrase }」では { $tool } を提示しません。
tools-show = 慎重ツールモード：{ $state }。このサーバー独自のフレーズ（組み込みのフレーズも有効）：
cmd-drafting-check-name = 確認対象
cmd-drafting-check-description = 確認するもの：tools（ツール要求）、replies（返信）、both（両方）
cmd-drafting-model-name = モデル
cmd-drafting-model-description = このサーバーの確認用モデル。設定されたモデルから選ぶか、"default" で設定の順に戻す
drafting-model-refused = `{ $model }` はこのボットのモデルではないため、何も変更していません。次から選んでください：{ $allowed }（または "default"）。
drafting-details = 確認対象：{ $check }。このサーバーの確認用モデル：{ $model }。確認の指示：{ $prompt }。
cmd-drafting-prompt-name = 指示
cmd-drafting-prompt-description = edit：確認の指示をフォームで編集。default：設定の指示に戻す
drafting-prompt-title = 確認の指示
drafting-prompt-label = 指示（空欄で既定の指示）
drafting-prompt-own = このサーバー独自
drafting-prompt-default = 既定
cmd-persona-name = ペルソナ
cmd-persona-description = このサーバーのペルソナ：選ぶ、見る、編集する
cmd-persona-list-name = 一覧
cmd-persona-list-description = このサーバーで使えるペルソナ
cmd-persona-use-name = 使う
cmd-persona-use-description = ここでこのペルソナとして話す（新しいコピーを使う）
cmd-persona-use-name-name = 名前
cmd-persona-use-name-description = /persona list に出るペルソナの ID か名前
cmd-persona-show-name = 表示
cmd-persona-show-description = このサーバーのペルソナと、ここでの投稿のしかた
cmd-persona-edit-name = 編集
cmd-persona-edit-description = このサーバーのペルソナをフォームで編集：名前、プロンプト、反応する言葉、アイコン
persona-list-title = このサーバーで使えるペルソナ（/persona use <ID>）：
persona-list-line = - { $id }：{ $name }
persona-list-line-here = - { $id }：{ $name }（このサーバーで使用中）
persona-unknown = 「{ $name }」というペルソナはありません。ペルソナ：{ $ids }。
persona-used = このサーバーは { $name } として話します。{ $id } のこのサーバー専用のコピーで、/persona edit での変更はこのサーバーだけに効きます。
persona-show = ペルソナ：{ $name }（{ $origin }、元：{ $id }）
    反応する言葉：{ $words }
    アイコン：{ $avatar }
    このチャンネルでは{ $voice }投稿します。
    システムプロンプト：
persona-origin-own = このサーバー専用のコピー
persona-origin-default = 既定
persona-voice-webhook = Webhook を使って自分の名前とアイコンで
persona-voice-bot = ボットユーザーとして（ここで「ウェブフックの管理」権限があれば自分の名前とアイコンで）
persona-edit-title = このサーバーのペルソナを編集
persona-field-name = 名前
persona-field-prompt = システムプロンプト
persona-field-words = 反応する言葉（カンマ区切り）
persona-field-avatar = アイコンのアドレス（https://…）
persona-saved = 保存しました。このサーバーは { $name } として話します。ほかのサーバーは変わりません。
persona-problem-no-name = 変更していません。ペルソナには名前が必要です。
persona-problem-reserved-name = 変更していません。Discord では「discord」「clyde」を含む名前や「everyone」「here」は使えません。
persona-problem-avatar = 変更していません。アイコンは https:// のアドレスにしてください。
cmd-memory-show-member-name = メンバー
cmd-memory-show-member-description = サーバー管理権限があれば：このメンバーについて覚えていること
persona-problem-no-prompt = 変更していません。ペルソナにはシステムプロンプトが必要です。
cmd-replies-name = 返信
cmd-replies-description = このサーバーでの返信をメッセージにどう分けるか
cmd-replies-style-name = 形式
cmd-replies-style-description = 返信の分け方を選びます：paragraphs、compact、または既定
cmd-replies-style-style-name = 形式
cmd-replies-style-style-description = paragraphs（人が送るように数通に分ける）、compact（長さに必要な数だけ）、default
replies-style-set = ここでの返信：{ $style }。
reply-style-paragraphs = paragraphs（数通に分け、短い段落はまとめる）
reply-style-compact = compact（長さに必要な数だけ）
reply-style-default = { $style }（既定）
cmd-replies-reactions-name = リアクション
cmd-replies-reactions-description = 答えるメッセージに状態のリアクション：作業中は 👀、ツール実行中は ⚙️、失敗したら ❌
cmd-replies-reactions-state-name = 状態
cmd-replies-reactions-state-description = on または off
replies-reactions-on = ここでは状態のリアクションがオンです：作業中は 👀、ツール実行中は ⚙️ を付け、返信が出たら外します。失敗したら ❌ を残します。
replies-reactions-off = ここでは状態のリアクションがオフです。
cmd-replies-buttons-name = ボタン
cmd-replies-buttons-description = 返信のボタン：書いている間は停止、その後はもう一度・👍・👎
cmd-replies-buttons-state-name = 状態
cmd-replies-buttons-state-description = on または off
replies-buttons-on = ここではボタンがオンです：返信を書いている間は「停止」、その後は「もう一度」（質問した人）と 👍/👎（誰でも）が 15 分間使えます。
replies-buttons-off = ここではボタンがオフです：返信にボタンは付きません。
status-feedback = ここでの返信への評価：👍 { $up } · 👎 { $down }
button-stop = 停止
button-again = もう一度
button-expired = このボタンは期限切れです（15 分間有効）。
button-not-yours-stop = この返信を止められるのは、質問した人かモデレーターだけです。
button-not-yours-again = 別の答えを求められるのは、質問した人だけです。
button-no-more-again = この質問にはすでに { $max } 回答え直しました。
button-stop-nothing = その返信はもう書き終わっています。
button-again-busy = このチャンネルで作業中です。終わってから「もう一度」を押してください。
button-again-gone = 質問が見つからないため、答え直せません。
button-again-unavailable = 今は答え直せません。少し待ってからもう一度お試しください。
feedback-noted-up = ありがとうございます：👍 を記録しました。
feedback-noted-down = ありがとうございます：👎 を記録しました。
feedback-unavailable = 今は保存できませんでした。少し待ってからもう一度お試しください。
notice-feedback-title = メンバーが返信を評価しました
notice-field-verdict = 評価
notice-field-feedback = この返信の評価
cmd-tools-approvals-name = 承認
cmd-tools-approvals-description = 承認が必要なツール呼び出しを誰が承認するか
cmd-tools-approvals-by-name = 承認者
cmd-tools-approvals-by-description = requester（質問者かモデレーター）または moderators
tools-approvals-requester = ここでの承認は、私が答えているメンバーかモデレーターが決めます。
tools-approvals-moderators = ここでの承認はモデレーターだけが決めます。
cmd-tools-mcp-name = mcp
cmd-tools-mcp-description = MCP サーバーを一覧し、ここでのツールを有効または無効にします
cmd-tools-mcp-action-name = action
cmd-tools-mcp-action-description = list、enable または disable
cmd-tools-mcp-server-name = server
cmd-tools-mcp-server-description = /tools mcp list に表示されるサーバー名
tools-mcp-none = このボットには MCP サーバーが設定されていません。
tools-mcp-line = MCP { $server }：ここで有効：{ $here } · 接続：{ $connected } · ツール：{ $tools } · 最後のエラー：{ $error }
tools-mcp-unknown = 「{ $server }」という MCP サーバーはありません。サーバー：{ $servers }
tools-mcp-enabled = { $server } のツールをここで提供します。何かを変える呼び出しは引き続き承認を待ちます。
tools-mcp-disabled = { $server } のツールはもうここでは提供しません。
approval-card = **承認が必要です**（`{ $tool }`）
    { $what }
    { $who } が { $minutes } 分以内に「承認」か「拒否」を押してください。応答がなければ拒否になります。
approval-who-requester = <@{ $requester }> またはモデレーター
approval-who-moderators = モデレーター
approval-approve = 承認
approval-deny = 拒否
approval-approved = ✅ <@{ $by }> が承認しました。
approval-denied = ❌ <@{ $by }> が拒否しました。
approval-timed-out = ⌛ 時間内に応答がなかったため、実行しませんでした。
approval-withdrawn = 依頼は取り下げられました（/kill）。
approval-not-yours = あなたはこの依頼を決められません。
approval-decided = この依頼はすでに決まっています。
approval-what-channel-reminder = このチャンネルの全員にリマインダーを設定します（{ $when }）：「{ $text }」
approval-what-forget-server-fact = サーバー全体で覚えていること（事実 #{ $id }）を忘れます：「{ $text }」
approval-when-in = { $minutes } 分後
approval-outside = 外部ツール { $tool } を次の引数で呼び出す：{ $arguments }
approval-when-at = { $at }（{ $zone }）
approval-when-repeat = 、{ $repeat } で繰り返し
notice-approval-title = ツール呼び出しが承認を求めました
notice-field-what = 内容
notice-field-outcome = 結果

# /ask (SPEC A5)
cmd-ask-name = 質問
cmd-ask-description = 何でも聞いてください。ここで答えます
cmd-ask-text-name = 内容
cmd-ask-text-description = 聞きたいこと
cmd-ask-private-name = 非公開
cmd-ask-private-description = 答えをあなただけに表示します
ask-refused = ここでは答えられません。このサーバーのモデレーターが、このチャンネルかあなたのロールで私を使えないようにしています。
ask-stopping = ただいま再起動中です。1分ほどしてからもう一度聞いてください。
ask-stopped = 停止しました。
ask-no-answer = それについての答えはありません。
ask-cut = ここで止めました。Discord ではコマンドへの答えを書けるのは15分までです。

# Message menus (SPEC A5)
menu-ask-name = これについて質問
menu-remember-name = これを覚えて
menu-forget-name = これを忘れて
menu-ask-title = このメッセージについて質問
menu-ask-question = 質問
menu-remember-nothing = このメッセージには、人について覚えられることがありません。
menu-remembered = 覚えておきます。
menu-remember-full = この人についてこれ以上覚えられません。モデレーターに /memory で整理してもらってください。
menu-remember-consent = { $author } さん、{ $asker } さんがあなたのメッセージのこの内容を私に覚えてほしいそうです：「{ $fact }」。よろしいですか？
menu-consent-allow = 許可
menu-consent-decline = 断る
menu-consent-not-yours = これに答えられるのは、メッセージを書いた本人だけです。
menu-consent-expired = この依頼は期限切れです。何も覚えていません。
menu-consent-allowed = 許可されました：覚えておきます。
menu-consent-declined = 断られました：何も覚えていません。
menu-forgot = そのメッセージから覚えたことを { $count } 件忘れました。
